/**
 * The edge console: signs in (or resumes the session cookie), then routes `/#/<page>` to the
 * page's module, loaded on demand (the shared shell, console/shared/app.tsx).
 */
import '../shared/styles.css';
import { edge, rest, useCredentials, type Caller } from '../shared/api.js';
import { mountConsole, type PageEntry } from '../shared/app.js';
import { SignIn } from './signin.js';

const PAGES: Record<string, PageEntry> = {
  overview: { label: 'Overview', load: () => import('./pages/overview.js') },
  devices: { label: 'Devices and tags', load: () => import('./pages/devices.js') },
  live: { label: 'Live values', load: () => import('./pages/live.js') },
  integrations: { label: 'Integrations', load: () => import('./pages/integrations.js') },
  twins: { label: 'Digital twins', load: () => import('./pages/twins.js') },
  opcua: { label: 'OPC UA server', load: () => import('./pages/opcua.js') },
  analytics: { label: 'Analytics', load: () => import('./pages/analytics.js') },
  configuration: { label: 'Configuration', load: () => import('./pages/configuration.js') },
  logs: { label: 'Logs', load: () => import('./pages/logs.js') },
  settings: { label: 'Settings', load: () => import('./pages/settings.js') },
};

mountConsole<Caller>({
  // 401: no session; 403: a session that must finish the first-run steps first (the sign-in does).
  session: () => rest<Caller>('GET', '/auth/v3/whoami'),
  signIn: (onSignedIn) => <SignIn onSignedIn={onSignedIn} />,
  signOut: async () => {
    // The session cookie is HttpOnly: the edge clears it; an API client's token is dropped.
    await edge()
      .request('POST', '/auth/v2/logout')
      .catch(() => undefined);
    useCredentials();
  },
  caller: (c) => c,
  product: () => 'Millwright edge',
  pages: () => PAGES,
  home: () => 'overview',
});
