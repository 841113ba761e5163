/**
 * Configuration templates over the edge's REST API, as the suites of the modules' sections use
 * them: a document uploaded through one upload session and applied (`PUT /config/template/{id}`),
 * and the current sections read through a saved template's download.
 */
import assert from 'node:assert/strict';
import { request } from 'undici';
import { insecureAgent, type HttpReply, type TestEdge } from './edge.js';

/** A template document of format version 1 with these sections. */
export const templateOf = (sections: Record<string, unknown>) => ({
  format: 'millwright.config-template',
  version: 1,
  sections,
});

/** Uploads `doc` in one chunk and PUTs it with `body` (the apply options) and extra `headers`. */
export async function applyTemplate(
  t: TestEdge,
  auth: Record<string, string>,
  doc: unknown,
  body: Record<string, unknown> = {},
  headers: Record<string, string> = {},
): Promise<HttpReply> {
  const session = await t.call('/config/session', { json: {}, headers: auth });
  assert.equal(session.status, 201, session.text);
  const r = await request(`${t.url}/config/session/${session.body.id}?offset=0`, {
    method: 'PATCH',
    headers: { ...auth, 'content-type': 'application/octet-stream' },
    body: typeof doc === 'string' ? doc : JSON.stringify(doc),
    dispatcher: insecureAgent,
  });
  const reply = await r.body.text();
  assert.equal(r.statusCode, 200, reply);
  return t.call(`/config/template/${session.body.id}`, {
    method: 'PUT',
    json: body,
    headers: { ...auth, ...headers },
  });
}

/** The edge's current sections, through a saved template's download (the template is deleted). */
export async function currentSections(t: TestEdge, auth: Record<string, string>): Promise<any> {
  const saved = await t.call('/config/templates', { json: { name: 'probe' }, headers: auth });
  assert.equal(saved.status, 201, saved.text);
  const doc = await t.call(`/config/templates/${saved.body.id}/download`, { headers: auth });
  assert.equal(doc.status, 200, doc.text);
  const gone = await t.call(`/config/templates/${saved.body.id}`, { method: 'DELETE', headers: auth });
  assert.equal(gone.status, 204, gone.text);
  return doc.body.sections;
}
