/**
 * A value written into SQL text as a literal, for `runScript`: whole numbers as they are, text
 * quoted with its quotes doubled, null as NULL. Anything else is refused, and so is a backslash,
 * which PostgreSQL reads as an escape where standard_conforming_strings is off.
 */
export function sqlLiteral(value: number | string | null): string {
  if (value === null) return 'NULL';
  if (typeof value === 'number') {
    if (!Number.isSafeInteger(value)) throw new Error(`sqlLiteral takes whole numbers only, got ${value}`);
    return String(value);
  }
  if (/[\0\\]/.test(value)) throw new Error('sqlLiteral cannot write a NUL character or a backslash');
  return `'${value.replace(/'/g, "''")}'`;
}
