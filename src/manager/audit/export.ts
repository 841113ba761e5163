/**
 * Exports of the audit trail: CSV streamed in chain order (a batch of rows in memory at a time,
 * whatever the size), and a PDF report (the filters, a table, page numbers and the chain head)
 * drawn with pdfkit page by page as rows arrive.
 */
import { Readable } from 'node:stream';
import type { AuditFilter, AuditRepository, AuditRow } from './repository.js';

/** The most records one PDF report holds (a CSV has no bound). */
export const PDF_MAX_RECORDS = 50_000;

const CSV_COLUMNS = [
  'seq',
  'time',
  'actor',
  'actorName',
  'companyId',
  'projectId',
  'module',
  'action',
  'origin',
  'target',
  'outcome',
  'status',
  'requestId',
  'details',
  'prevHash',
  'hash',
] as const;

function csvCell(v: unknown): string {
  if (v === null || v === undefined) return '';
  const s = String(v);
  // Cells a spreadsheet would run as a formula are quoted with a leading apostrophe.
  const safe = /^[=+\-@\t\r]/.test(s) ? `'${s}` : s;
  return /[",\n\r]/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe;
}

function csvLine(r: AuditRow): string {
  return (
    [
      r.seq,
      new Date(Number(r.at)).toISOString(),
      r.actor,
      r.actor_name,
      r.company_id,
      r.project_id,
      r.module,
      r.action,
      r.origin,
      r.target,
      r.outcome,
      r.status,
      r.request_id,
      r.details,
      r.prev_hash,
      r.hash,
    ]
      .map(csvCell)
      .join(',') + '\n'
  );
}

/** The CSV of the matching records, streamed: lines go out as batches are read (back-pressured). */
export function csvExport(repo: AuditRepository, filter: AuditFilter): Readable {
  async function* lines() {
    yield `${CSV_COLUMNS.join(',')}\n`;
    let chunk = '';
    for await (const r of repo.scan(filter, 500)) {
      chunk += csvLine(r);
      if (chunk.length > 16 * 1024) {
        yield chunk;
        chunk = '';
      }
    }
    if (chunk) yield chunk;
  }
  return Readable.from(lines(), { objectMode: false });
}

const PDF_COLUMNS: { title: string; width: number; value: (r: AuditRow) => string }[] = [
  { title: '#', width: 45, value: (r) => String(r.seq) },
  { title: 'Time (UTC)', width: 115, value: (r) => new Date(Number(r.at)).toISOString().replace('T', ' ') },
  { title: 'Actor', width: 110, value: (r) => r.actor_name ?? r.actor },
  { title: 'Module', width: 60, value: (r) => r.module },
  { title: 'Action', width: 150, value: (r) => r.action },
  { title: 'Origin', width: 50, value: (r) => r.origin },
  { title: 'Target', width: 180, value: (r) => r.target ?? '' },
  { title: 'Outcome', width: 70, value: (r) => `${r.outcome}${r.status ? ` ${r.status}` : ''}` },
];

/**
 * The PDF report of the matching records (`PDF_MAX_RECORDS` at most), streamed as pages fill and
 * back-pressured: pdfkit pushes whatever is drawn into its own buffer, so its output goes through
 * `out`, and drawing waits at the end of a page while `out` is full (a slow reader holds a page
 * or two in memory, not the report). pdfkit is loaded with the first report, not with the manager.
 */
export async function pdfExport(
  repo: AuditRepository,
  filter: AuditFilter,
  head: { seq: number; hash: string },
  filters: Record<string, string>,
): Promise<Readable> {
  const PDFDocument = (await import('pdfkit')).default;
  const doc = new PDFDocument({ size: 'A4', layout: 'landscape', margin: 30, bufferPages: false });
  let wake: (() => void) | null = null;
  let full = false;
  const out = new Readable({
    read() {
      full = false;
      wake?.();
      wake = null;
    },
  });
  doc.on('data', (chunk: Buffer) => {
    if (!out.push(chunk)) full = true;
  });
  doc.on('end', () => out.push(null));
  const drained = () =>
    full && !out.destroyed ? new Promise<void>((resolve) => (wake = resolve)) : Promise.resolve();
  const left = 30;
  const bottom = doc.page.height - 40;
  let page = 0;
  const footer = () => {
    page++;
    // Below the bottom margin: pdfkit would start a new page for it unless the margin is lifted.
    const margin = doc.page.margins.bottom;
    doc.page.margins.bottom = 0;
    doc
      .fontSize(7)
      .fillColor('#555')
      .text(`Page ${page}`, left, doc.page.height - 25, {
        width: doc.page.width - 60,
        align: 'right',
        lineBreak: false,
      });
    doc.page.margins.bottom = margin;
    doc.fillColor('black');
  };
  const tableHeader = (y: number) => {
    let x = left;
    doc.font('Helvetica-Bold').fontSize(7);
    for (const c of PDF_COLUMNS) {
      doc.text(c.title, x, y, { width: c.width - 4, lineBreak: false });
      x += c.width;
    }
    doc.font('Helvetica');
    return y + 12;
  };
  const newPage = async () => {
    await drained();
    doc.addPage();
    footer();
  };
  void (async () => {
    try {
      doc.font('Helvetica-Bold').fontSize(14).text('Millwright edge manager: audit trail', left, 30);
      doc.font('Helvetica').fontSize(8);
      doc.text(`Generated ${new Date().toISOString()}`);
      doc.text(`Chain head: record ${head.seq}, hash ${head.hash}`);
      const shown = Object.entries(filters);
      doc.text(`Filters: ${shown.length ? shown.map(([k, v]) => `${k}=${v}`).join(', ') : 'none'}`);
      let y = tableHeader(doc.y + 8);
      footer();
      let n = 0;
      for await (const r of repo.scan(filter, 1000, PDF_MAX_RECORDS)) {
        if (out.destroyed) return; // the reader went away
        if (y > bottom) {
          await newPage();
          y = tableHeader(30);
        }
        let x = left;
        doc.fontSize(7);
        for (const c of PDF_COLUMNS) {
          doc.text(c.value(r), x, y, { width: c.width - 4, lineBreak: false, ellipsis: true });
          x += c.width;
        }
        y += 10;
        n++;
      }
      if (y > bottom) {
        await newPage();
        y = 30;
      }
      doc
        .fontSize(8)
        .text(`${n} record(s)${n === PDF_MAX_RECORDS ? ` (the report's limit)` : ''}.`, left, y + 6);
      doc.end();
    } catch (err) {
      out.destroy(err as Error);
    }
  })();
  return out;
}
