/** The subjects the acquisition engine publishes on, kept as flat strings. */

/**
 * A string as one flat copy. Subjects built by concatenation are rope strings: a rope and the flat
 * copy the first lookup makes of it both stay alive, 100,000 times over on a large site.
 */
export function flat(s: string): string {
  return Buffer.from(s, 'utf8').toString('utf8');
}
