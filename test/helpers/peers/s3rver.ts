/**
 * An S3-compatible object storage of the test's own: s3rver (an npm package) on a free port with
 * a temporary directory, buckets made at start, and a count of the requests it received (by a
 * listener on its HTTP server, ahead of s3rver's own), so a test can tell which parts were sent.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { IncomingMessage, Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../util.js';

const S3rverClass = createRequire(import.meta.url)('s3rver') as new (options: object) => {
  run(): Promise<{ port: number }>;
  close(): Promise<void>;
  httpServer: Server;
};

export class S3rver {
  readonly dir = mkdtempSync(join(tmpdir(), 'mw-s3rver-'));
  /** The access key id s3rver knows; it does not check SigV4 signatures, so any secret passes. */
  readonly accessKeyId = 'S3RVER';
  readonly secretAccessKey = 'secret-key-of-the-test-7f3a9c';
  port = 0;
  /** Every request received: method and URL. */
  readonly requests: { method: string; url: string }[] = [];
  #server: InstanceType<typeof S3rverClass> | undefined;

  constructor(readonly buckets: string[]) {}

  get endpoint(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    this.port = await freePort();
    this.#server = new S3rverClass({
      address: '127.0.0.1',
      port: this.port,
      silent: true,
      directory: this.dir,
      configureBuckets: this.buckets.map((name) => ({ name })),
    });
    await this.#server.run();
    this.#server.httpServer.prependListener('request', (req: IncomingMessage) => {
      this.requests.push({ method: req.method ?? '', url: req.url ?? '' });
    });
  }

  /** The part numbers of the multipart upload requests received since `from` (an index of `requests`). */
  partsSince(from: number): number[] {
    return this.requests
      .slice(from)
      .filter((r) => r.method === 'PUT' && /[?&]partNumber=\d+/.test(r.url))
      .map((r) => Number(/[?&]partNumber=(\d+)/.exec(r.url)![1]));
  }

  async stop(): Promise<void> {
    await this.#server?.close();
    rmSync(this.dir, { recursive: true, force: true });
  }
}
