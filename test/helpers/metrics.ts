/** Reading a process's `/metrics` endpoint in tests. */

/** Scrapes `url` and parses the Prometheus text format into `name{labels}` → value (labels in the order given). */
export async function scrapeMetrics(url: string): Promise<Map<string, number>> {
  const text = await (await fetch(url)).text();
  const values = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line.startsWith('#') || line.trim() === '') continue;
    const at = line.lastIndexOf(' ');
    values.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return values;
}
