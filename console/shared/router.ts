/** Hash routing (`/#/devices/…`): the edge serves the console at `/`, API paths stay untouched. */
import { useEffect, useState } from 'preact/hooks';

export interface Route {
  /** `/devices/abc` → ['devices', 'abc']. */
  parts: string[];
  query: URLSearchParams;
}

export function currentRoute(): Route {
  const raw = location.hash.replace(/^#/, '') || '/';
  const [path = '/', q = ''] = raw.split('?');
  return { parts: path.split('/').filter(Boolean).map(decodeURIComponent), query: new URLSearchParams(q) };
}

export function useRoute(): Route {
  const [route, setRoute] = useState(currentRoute);
  useEffect(() => {
    const on = () => setRoute(currentRoute());
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, []);
  return route;
}

export function navigate(path: string): void {
  location.hash = `#${path}`;
}

export function href(path: string): string {
  return `#${path}`;
}
