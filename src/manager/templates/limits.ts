/** Bounds of the manager's templates (docs/security.md). */
export const TEMPLATE_LIMITS = {
  /** Bytes of one template document (one upload to the edge). */
  maxDocumentBytes: 16 * 1024 * 1024,
  /** Templates kept by the manager. */
  maxTemplates: 10_000,
  /** Devices of one preview call. */
  maxPreviewDevices: 50,
  /** Devices of one preview call with `withContent` (each one's configuration is read). */
  maxContentPreviewDevices: 10,
  /** Bytes of one device's `content` in a preview (larger: left out, `truncated`). */
  maxPreviewContentBytes: 512 * 1024,
  /** Previews run at once for one call. */
  previewConcurrency: 8,
  /** Entries of an uploaded ZIP archive. */
  maxZipEntries: 100,
  /** Scopes set in one call of template vars. */
  maxScopesPerCall: 1000,
};

/** Oldest edge service that previews a template for the manager. */
export const PREVIEW_MIN_EDGE_VERSION = '4.3.0';
