// A buyer agent written with @a2a-js/sdk: fetches a dealer agent's card and calls inventory.search and
// lead.submit over JSON-RPC and HTTP+JSON. Prints one JSON object per line; exits 1 on any failure.
//
//   A2A_JS_PREFIX=.cache/node node scripts/a2a_js_client.mjs http://127.0.0.1:8000/dealers/demo-toyota-sf
import { createRequire } from 'node:module';
import { randomUUID } from 'node:crypto';
import path from 'node:path';

const prefix = path.resolve(process.env.A2A_JS_PREFIX || '.cache/node');
const require = createRequire(path.join(prefix, 'resolve.cjs'));
const { ClientFactory, ClientFactoryOptions } = require('@a2a-js/sdk/client');
const { Role } = require('@a2a-js/sdk');

const base = process.argv[2].replace(/\/?$/, '/'); // the resolver drops the last segment without a slash
const MT = (stem, kind) => `application/vnd.autoagent.${stem}-${kind}+json`;

const request = (stem, data) => ({
  message: {
    messageId: randomUUID(),
    role: Role.ROLE_USER,
    parts: [{ content: { $case: 'data', value: data }, mediaType: MT(stem, 'request') }],
  },
  configuration: { acceptedOutputModes: [MT(stem, 'response')] },
});

const lead = (binding) => ({
  type: 'lead.submit.request',
  customer: { first_name: 'Ada', last_name: 'Node', email: `ada.${binding.replace('+', '')}@example.com`, preferred_contact: 'email' },
  consent: {
    granted_at: new Date(Date.now() - 60000).toISOString(),
    allowed_channels: ['email'],
    consent_text: 'I agree that the dealer may e-mail me about my inquiry.',
    source_agent: 'a2a-js-test',
    scope: ['lead_submission'],
  },
  message: 'Is the car still available?',
  source_agent: 'a2a-js-test',
  idempotency_key: randomUUID(),
});

let failed = false;
for (const binding of ['JSONRPC', 'HTTP+JSON']) {
  const factory = new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, { preferredTransports: [binding] }),
  );
  try {
    const client = await factory.createFromUrl(base);
    const card = await client.getAgentCard();
    const found = await client.sendMessage(request('inventory-search', { type: 'inventory.search.request', pagination: { limit: 2 } }));
    const search = found.parts[0];
    const submitted = await client.sendMessage(request('lead-submit', lead(binding)));
    const out = submitted.parts[0];
    let errorCode = null;
    try {
      await client.sendMessage(request('inventory-search', { type: 'inventory.search.request', bogus: 1 }));
    } catch (e) {
      errorCode = e.data?.code ?? e.statusCode ?? e.constructor.name;
    }
    console.log(JSON.stringify({
      binding,
      transport: client.transport.protocolName,
      card_name: card.name,
      search_media_type: search.mediaType,
      search: search.content.value,
      lead_media_type: out.mediaType,
      lead: out.content.value,
      error: errorCode,
    }));
  } catch (e) {
    failed = true;
    console.log(JSON.stringify({ binding, failure: `${e.constructor.name}: ${e.message}` }));
  }
}
process.exit(failed ? 1 : 0);
