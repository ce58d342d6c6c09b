/** What `cluster.sh env` prints (`export KEY=VALUE` lines), as variables. */
export function parseExports(text: string): Record<string, string> {
  return Object.fromEntries(
    text
      .trim()
      .split('\n')
      .map((line) => /^export ([A-Z_]+)=(.*)$/.exec(line))
      .filter((match) => match !== null)
      .map((match) => [match[1]!, match[2]!]),
  );
}
