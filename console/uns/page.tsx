/** The shared `Page`, titled for the UNS console (the shared one names the edge in the window title). */
import type { ComponentChildren } from 'preact';
import { useEffect } from 'preact/hooks';
import { Page } from '../shared/ui.js';

export function UnsPage(props: { title: string; actions?: ComponentChildren; children: ComponentChildren }) {
  // Runs after Page's own effect (a child's effects run first).
  useEffect(() => {
    document.title = `${props.title} · Millwright UNS`;
  }, [props.title]);
  return <Page {...props} />;
}
