/** The manager connection: set the address, confirm the certificate's fingerprint, send the activation code. */
import { useState } from 'preact/hooks';
import { errorText, rest } from '../../shared/api.js';
import { Confirm, Field } from '../../shared/form.js';
import { Badge, Button, ErrorNote, Section, toast, useCanWrite, useLoad } from '../../shared/ui.js';

interface DmStatus {
  enrolled: boolean;
  managerUrl: string | null;
  fingerprint: string | null;
  deviceId: string | null;
  projectId: string | null;
  connected: boolean;
  lastError: string | null;
}

export function ManagerSection() {
  const canWrite = useCanWrite();
  const status = useLoad(() => rest<DmStatus>('GET', '/dm/cloud'));
  const [url, setUrl] = useState('');
  const [proposal, setProposal] = useState<{ tx: string; url: string; fingerprint: string }>();
  const [confirmed, setConfirmed] = useState(false);
  const [code, setCode] = useState('');
  const [name, setName] = useState('');
  const [error, setError] = useState<string>();
  const [leaving, setLeaving] = useState(false);
  const step = async (fn: () => Promise<void>) => {
    setError(undefined);
    try {
      await fn();
      status.reload();
    } catch (err) {
      setError(errorText(err));
    }
  };
  const s = status.data;
  return (
    <Section title="Manager connection">
      <ErrorNote error={status.error} />
      {s && (
        <p>
          {s.enrolled ? (
            <>
              Enrolled with <span class="mono">{s.managerUrl}</span> as device{' '}
              <span class="mono">{s.deviceId}</span>:{' '}
              <Badge tone={s.connected ? 'ok' : 'bad'}>{s.connected ? 'connected' : 'disconnected'}</Badge>
              {s.lastError && <span class="muted"> ({s.lastError})</span>}
            </>
          ) : (
            'Not enrolled with a manager.'
          )}
        </p>
      )}
      {canWrite && s && !s.enrolled && (
        <ol>
          <li>
            <form
              class="row"
              aria-label="Manager address"
              onSubmit={(e) => {
                e.preventDefault();
                void step(async () => {
                  setProposal(await rest('POST', '/dm/cloud/url', { url }));
                  setConfirmed(false);
                });
              }}
            >
              <Field
                spec={{ name: 'managerUrl', label: 'Manager address', kind: 'text', required: true }}
                value={url}
                onInput={setUrl}
              />
              <button type="submit" class="btn">
                Set manager address
              </button>
            </form>
          </li>
          {proposal && (
            <li>
              <p>
                The manager at <span class="mono">{proposal.url}</span> presents a certificate with the
                SHA-256 fingerprint:
              </p>
              <p class="mono secret">{proposal.fingerprint}</p>
              <p>Compare it with the fingerprint your manager shows before confirming.</p>
              <Button
                kind="primary"
                disabled={confirmed}
                onClick={() =>
                  void step(async () => {
                    await rest('PUT', `/dm/cloud/url/${proposal.tx}/confirm`);
                    setConfirmed(true);
                    toast('Manager certificate confirmed');
                  })
                }
              >
                {confirmed ? 'Certificate confirmed' : 'Confirm certificate'}
              </Button>
            </li>
          )}
          {confirmed && (
            <li>
              <form
                class="row"
                aria-label="Activation"
                onSubmit={(e) => {
                  e.preventDefault();
                  void step(async () => {
                    await rest('POST', '/dm/cloud', { code, ...(name ? { name } : {}) });
                    toast('Edge enrolled with the manager');
                  });
                }}
              >
                <Field
                  spec={{ name: 'code', label: 'Activation code', kind: 'text', required: true }}
                  value={code}
                  onInput={setCode}
                />
                <Field
                  spec={{ name: 'edgeName', label: 'Edge name', kind: 'text' }}
                  value={name}
                  onInput={setName}
                />
                <button type="submit" class="btn btn-primary">
                  Send activation code
                </button>
              </form>
            </li>
          )}
        </ol>
      )}
      {canWrite && s?.enrolled && (
        <Button kind="danger" onClick={() => setLeaving(true)}>
          Leave the manager
        </Button>
      )}
      <ErrorNote error={error} />
      <Confirm
        title="Leave the manager"
        open={leaving}
        danger
        confirmLabel="Leave the manager"
        onConfirm={() => void step(() => rest('DELETE', '/dm/cloud'))}
        onClose={() => setLeaving(false)}
      >
        <p>Unenrol this edge? The manager no longer reaches it.</p>
      </Confirm>
    </Section>
  );
}
