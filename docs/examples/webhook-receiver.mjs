// A webhook receiver that checks every delivery as Standard Webhooks says, with the
// `standardwebhooks` library: `webhook-id`, `webhook-timestamp` and `webhook-signature`
// over the raw body, the timestamp within 5 minutes. A delivery may come twice (at least
// once): the `webhook-id` (the event id) tells a repeat.
//
//   WEBHOOK_SECRET=whsec_… node docs/examples/webhook-receiver.mjs 8899
import http from 'node:http';
import { Webhook } from 'standardwebhooks';

const signer = new Webhook(process.env.WEBHOOK_SECRET);
const seen = new Set();

http
  .createServer((request, response) => {
    const chunks = [];
    request.on('data', (chunk) => chunks.push(chunk));
    request.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      let event;
      try {
        event = signer.verify(body, request.headers);
      } catch (err) {
        console.log(`refused: ${err.message}`);
        response.writeHead(400).end();
        return;
      }
      const repeat = seen.has(event.eventId) ? ' (repeat)' : '';
      seen.add(event.eventId);
      console.log(`verified ${event.kind} ${event.sandboxId} ${event.from ?? '-'}→${event.to ?? '-'} reason=${event.reason} actor=${event.actor}${repeat}`);
      response.writeHead(204).end();
    });
  })
  .listen(Number(process.argv[2] ?? 8899), '127.0.0.1', function () {
    console.log(`listening on 127.0.0.1:${this.address().port}`);
  });
