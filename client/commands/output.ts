/** Prints a value as pretty JSON on stdout (dates as ISO strings, bigints as strings). */
export function printJson(value: unknown): void {
  console.log(JSON.stringify(value, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v), 2));
}
