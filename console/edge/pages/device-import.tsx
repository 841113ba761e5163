/** CSV import of tags: the upload's progress, then the stats and the per-line failures of `UploadStatus`. */
import { useState } from 'preact/hooks';
import { readCookie } from '../../../src/client/fetch-transport.js';
import { PATHS } from '../../shared/api.js';
import { Table } from '../../shared/table.js';
import { Button, ErrorNote, Section, Stat, toast } from '../../shared/ui.js';

interface UploadStatus {
  Success: boolean;
  Stats: { Total: number; Created: number; Updated: number; Failed: number };
  FailDetails: { Line: number; DeviceName: string; TagName: string; Reason: string }[];
}

const UPLOAD =
  'mutation U($file: Upload!) { UploadCsv(File: $file) { Success Stats { Total Created Updated Failed } FailDetails { Line DeviceName TagName Reason } } }';

/**
 * The GraphQL multipart request, sent with XMLHttpRequest because `fetch` reports no upload
 * progress; same cookie and CSRF header as every other mutation.
 */
function upload(
  file: File,
  onProgress: (sent: number, total: number, phase: string) => void,
): Promise<UploadStatus> {
  const form = new FormData();
  form.append('operations', JSON.stringify({ query: UPLOAD, variables: { file: null } }));
  form.append('map', JSON.stringify({ 0: ['variables.file'] }));
  form.append('0', file, file.name);
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open('POST', PATHS.devicehub);
    const csrf = readCookie('csrfToken');
    if (csrf) xhr.setRequestHeader('x-csrf-token', csrf);
    xhr.upload.onprogress = (e) => onProgress(e.loaded, e.total || file.size, 'Uploading');
    xhr.upload.onload = () => onProgress(file.size, file.size, 'Processing on the edge');
    xhr.onerror = () => reject(new Error('the upload failed (connection)'));
    xhr.onload = () => {
      try {
        const body = JSON.parse(xhr.responseText) as {
          data?: { UploadCsv?: UploadStatus };
          errors?: { message: string }[];
        };
        if (body.errors?.length) reject(new Error(body.errors.map((e) => e.message).join('; ')));
        else if (body.data?.UploadCsv) resolve(body.data.UploadCsv);
        else reject(new Error(`unexpected answer (${xhr.status})`));
      } catch {
        reject(new Error(`unexpected answer (${xhr.status}): ${xhr.responseText.slice(0, 200)}`));
      }
    };
    xhr.send(form);
  });
}

export function CsvImport(props: { onDone: () => void }) {
  const [file, setFile] = useState<File>();
  const [progress, setProgress] = useState<{ sent: number; total: number; phase: string }>();
  const [result, setResult] = useState<UploadStatus>();
  const [error, setError] = useState<string>();
  const start = async () => {
    if (!file) return;
    setError(undefined);
    setResult(undefined);
    try {
      const r = await upload(file, (sent, total, phase) => setProgress({ sent, total, phase }));
      setResult(r);
      setProgress((p) => p && { ...p, phase: 'Done' });
      toast(
        `Import finished: ${r.Stats.Created} created, ${r.Stats.Updated} updated, ${r.Stats.Failed} failed`,
        r.Success ? 'ok' : 'error',
      );
      props.onDone();
    } catch (err) {
      setError(err instanceof Error ? err.message : String(err));
      setProgress(undefined);
    }
  };
  return (
    <Section title="Import tags from CSV">
      <div class="row">
        <div class="field">
          <label for="csv-file">CSV file</label>
          <input
            id="csv-file"
            type="file"
            accept=".csv,text/csv"
            onChange={(e) => setFile(e.currentTarget.files?.[0])}
          />
        </div>
        <Button
          kind="primary"
          disabled={!file || (progress !== undefined && progress.phase !== 'Done')}
          onClick={() => void start()}
        >
          Import CSV
        </Button>
      </div>
      {progress && (
        <div class="field">
          <label for="csv-progress">
            {progress.phase} ({Math.round((progress.sent / Math.max(1, progress.total)) * 100)} %)
          </label>
          <progress
            id="csv-progress"
            class="progress"
            max={progress.total}
            value={progress.phase === 'Processing on the edge' ? undefined : progress.sent}
          />
        </div>
      )}
      <ErrorNote error={error} />
      {result && (
        <>
          <div class="stats" aria-label="Import result">
            <Stat label="Lines" value={result.Stats.Total} />
            <Stat label="Created" value={result.Stats.Created} />
            <Stat label="Updated" value={result.Stats.Updated} />
            <Stat label="Failed" value={result.Stats.Failed} />
          </div>
          {result.FailDetails.length > 0 && (
            <Table
              caption="Failed lines"
              rows={result.FailDetails.slice(0, 500)}
              rowKey={(f) => String(f.Line)}
              columns={[
                { label: 'Line', render: (f) => f.Line, numeric: true },
                { label: 'Device', render: (f) => f.DeviceName },
                { label: 'Tag', render: (f) => f.TagName },
                { label: 'Reason', render: (f) => f.Reason },
              ]}
            />
          )}
          {result.FailDetails.length > 500 && (
            <p class="muted">First 500 of {result.FailDetails.length} failed lines shown.</p>
          )}
        </>
      )}
    </Section>
  );
}
