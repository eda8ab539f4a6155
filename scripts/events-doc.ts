// `npm run openapi` (with the OpenAPI document): writes docs/events.md and the events table of README.md
// from the event catalogue (src/modules/events/catalogue.ts), so the catalogue is the only hand-kept list.
//   node scripts/events-doc.ts --write   regenerate both
//   node scripts/events-doc.ts --check   exit 1 if either differs from the catalogue (npm run check)
import { readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { EVENT_CATALOGUE, EVENT_TYPES, type EventType } from '../src/modules/events/catalogue.ts';

const ROOT = resolve(import.meta.dirname, '..');
export const EVENTS_DOC = resolve(ROOT, 'docs/events.md');
const README = resolve(ROOT, 'README.md');
const START = '<!-- events table: generated from src/modules/events/catalogue.ts by `npm run openapi`; do not edit -->';
const END = '<!-- end of events table -->';

type Schema = {
  type?: string;
  const?: unknown;
  enum?: unknown[];
  format?: string;
  description?: string;
  properties?: Record<string, Schema>;
  required?: string[];
};

const typeOf = (s: Schema): string => {
  if (s.const !== undefined) return JSON.stringify(s.const);
  if (s.enum) return s.enum.map((v) => JSON.stringify(v)).join(' \\| ');
  if (s.type === 'object' && s.properties) return `{ ${Object.keys(s.properties).join(', ')} }`;
  return s.format ? `${s.type} (${s.format})` : (s.type ?? 'any');
};

/** `field` or `field`? (optional), in the catalogue's order. */
const fieldList = (type: EventType) => {
  const data = EVENT_CATALOGUE[type].data as Schema;
  return Object.keys(data.properties ?? {})
    .map((k) => `\`${k}\`${data.required?.includes(k) ? '' : '?'}`)
    .join(', ');
};

const state = (type: EventType) => (EVENT_CATALOGUE[type].state === null ? '`null`' : `\`${EVENT_CATALOGUE[type].state}\``);

/** The README's table: type, state after, data fields. */
export function readmeTable(): string {
  const rows = EVENT_TYPES.map((t) => `| \`${t}\` | ${state(t)} | ${fieldList(t)} |`);
  return [START, '| type | state after | data |', '|---|---|---|', ...rows, END].join('\n');
}

export function renderEventsDoc(): string {
  const out: string[] = [
    '# Events',
    '',
    '<!-- Generated from src/modules/events/catalogue.ts by `npm run openapi`; `npm run check` fails when it drifts. Do not edit. -->',
    '',
    'Every change to a quote or transfer is an event, written in the transaction that made the change. A',
    "transfer's timeline is `GET /transfer/{id}/events`; webhook endpoints receive the same events",
    '(`{ "type", "timestamp", "data": <event> }`, signed, see the README\'s Webhooks section). The OpenAPI',
    'document (`openapi.json`) has one webhook and one named schema per type (`<Type>Event`, `<Type>Data`).',
    '',
    'Every event has `id`, `type`, `transferId`, `sequence` (1, 2, 3... per transfer, no gaps), `position`',
    '(global, ascending), `state` (the transfer state after it), `occurredAt`, `actor.type` (`merchant`,',
    '`courier`, `operator`, `system`) and `data` below. Fields may be added to `data`; ignore the ones you do not know.',
    'Events caused by people also name the person: `actor.id` and `actor.name` (a courier: its id and first',
    'name only; an operator: the person id and display name; the CLI: `cli:<machine user>` and',
    "`cli (<machine user>)`; a merchant's user in the dashboard: the person id and name). The merchant's",
    'API calls, the system and the sandbox courier have neither.',
    '',
    '| type | state after | what happened | tracking page |',
    '|---|---|---|---|',
    ...EVENT_TYPES.map((t) => {
      const def = EVENT_CATALOGUE[t];
      return `| [\`${t}\`](#${t.replace(/\./g, '')}) | ${state(t)} | ${def.description} | ${def.label ? def.label('Ivan') : '(not shown)'} |`;
    }),
  ];
  for (const t of EVENT_TYPES) {
    const def = EVENT_CATALOGUE[t];
    const data = def.data as Schema;
    out.push('', `## ${t}`, '', `${def.description}. State after: ${state(t)}.`, '', '| `data` field | type | required | description |', '|---|---|---|---|');
    for (const [k, s] of Object.entries(data.properties ?? {})) {
      out.push(`| \`${k}\` | ${typeOf(s)} | ${data.required?.includes(k) ? 'yes' : 'no'} | ${s.description ?? ''} |`);
    }
    out.push('', '```json', JSON.stringify(def.example), '```');
  }
  return `${out.join('\n')}\n`;
}

/** README.md with its events table replaced by the generated one (the markers must be there). */
export function renderReadme(readme: string): string {
  const a = readme.indexOf(START);
  const b = readme.indexOf(END);
  if (a < 0 || b < a) throw new Error(`README.md lacks the events table markers:\n${START}\n${END}`);
  return readme.slice(0, a) + readmeTable() + readme.slice(b + END.length);
}

function main(args: string[]): number {
  const targets: Array<[string, string]> = [
    [EVENTS_DOC, renderEventsDoc()],
    [README, renderReadme(readFileSync(README, 'utf8'))],
  ];
  if (args.includes('--write')) {
    for (const [path, text] of targets) writeFileSync(path, text);
    console.log(`wrote ${targets.map(([p]) => p.slice(ROOT.length + 1)).join(', ')}`);
    return 0;
  }
  let failed = 0;
  for (const [path, text] of targets) {
    let committed = '';
    try {
      committed = readFileSync(path, 'utf8');
    } catch {}
    if (committed !== text) {
      console.error(`${path.slice(ROOT.length + 1)} is out of date with the event catalogue: run npm run openapi and commit it`);
      failed = 1;
    }
  }
  if (!failed) console.log('docs/events.md and the README events table are up to date');
  return failed;
}

if (import.meta.main) process.exitCode = main(process.argv.slice(2));
