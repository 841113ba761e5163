/** The signed-in session of the manager console, for the pages; and the page title's product. */
import { createContext } from 'preact';
import { useEffect } from 'preact/hooks';
import type { Session } from './api.js';

export const SessionContext = createContext<Session | null>(null);

/** Sets the document title after the design system's `Page` (which names the edge). */
export function useTitle(title: string): void {
  useEffect(() => {
    document.title = `${title} · Millwright manager`;
  }, [title]);
}
