/** The part of qrcode-terminal (no types of its own) that `approvers add` uses. */
declare module 'qrcode-terminal' {
  export function generate(text: string, options: { small: boolean }, done: (qr: string) => void): void;
}
