const MASK = '********';

/** What every secret is printed as. */
export const SECRET_MASK = MASK;

/**
 * Quotes a bad value for an error line. Long values are cut so a pasted blob never floods a log,
 * and the password of anything that looks like a URL is masked: a mistyped `DATABASE_URL` scheme
 * must not print the database password.
 */
export function show(raw: unknown): string {
  const text = maskUrlCredentials(typeof raw === 'string' ? raw : (JSON.stringify(raw) ?? String(raw)));
  const cut = text.length > 60 ? `${text.slice(0, 57)}...` : text;
  return `"${cut}"`;
}

/**
 * Masks the password of every `scheme://user:password@host` in `text`, whatever the scheme and
 * even when the rest is not a valid URL (a typo is exactly when it gets printed).
 */
export function maskUrlCredentials(text: string): string {
  // Greedy up to the last "@": a password with a raw "/" or "@" in it is masked whole, and
  // masking too much is the safe way to be wrong.
  return text.replace(/(\/\/[^/@\s:]*:)[^\s]*@/g, `$1${MASK}@`);
}

/**
 * The same inside a JSON text (a log line): a password ends at a quote as well, so masking never
 * swallows the fields that follow it on the line.
 */
export function maskUrlCredentialsInJson(text: string): string {
  return text.replace(/(\/\/[^/@\s:"]*:)[^\s"]*@/g, `$1${MASK}@`);
}
