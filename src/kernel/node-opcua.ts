/**
 * The one way node-opcua is loaded (the edge's OPC UA server worker and its OPC UA client driver;
 * once per thread). node-opcua prints its own warnings and errors with `console.log` (from its
 * `node-opcua-debug` package); they go to the service's log instead, as one line each.
 *
 * One warning is logged at debug level: NODE-OPCUA-W27 ("you need to use node flag
 * --security-revert=CVE-2023-46809 if you have issue with RSA PKCS#1 v1.5"). node-opcua prints it
 * when it loads on Node 20, after a self-test finds that Node refuses RSA PKCS#1 v1.5 decryption
 * (Node's fix for CVE-2023-46809). Only the deprecated security policy Basic128Rsa15 decrypts with
 * it: the edge's server never offers that policy (`SECURITY_POLICIES` of the opcua module) and the
 * client driver refuses it with its own message, so the warning asks a user for nothing they can
 * or should do (reverting a security fix).
 */
import { createRequire } from 'node:module';
import { format } from 'node:util';

type Opcua = typeof import('node-opcua');

export interface NodeOpcuaLog {
  debug(msg: string): void;
  warn(msg: string): void;
  error(msg: string): void;
}

/** node-opcua's warnings that ask nothing of a user (see the head of this file). */
const NOT_ACTIONABLE = /NODE-OPCUA-W27|--security-revert=CVE-2023-46809/;

let loaded: Promise<Opcua> | undefined;

/** node-opcua, its messages routed to `log` (the first caller's in this thread). */
export function loadNodeOpcua(log: NodeOpcuaLog): Promise<Opcua> {
  return (loaded ??= load(log));
}

async function load(log: NodeOpcuaLog): Promise<Opcua> {
  // node-opcua's own copy of node-opcua-debug, set up before node-opcua loads: the self-test
  // above starts while node-opcua loads and warns a moment later.
  const fromHere = createRequire(import.meta.url);
  const debug = createRequire(fromHere.resolve('node-opcua'))('node-opcua-debug') as Pick<
    Opcua,
    'setWarningLogger' | 'setErrorLogger'
  >;
  const text = (args: unknown[]) => `node-opcua: ${format(...args).trim()}`;
  debug.setWarningLogger((_context, ...args: unknown[]) => {
    const msg = text(args);
    if (NOT_ACTIONABLE.test(msg)) log.debug(msg);
    else log.warn(msg);
  });
  debug.setErrorLogger((_context, ...args: unknown[]) => log.error(text(args)));
  return import('node-opcua');
}
