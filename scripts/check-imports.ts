// `npm run check`: the layering of src/, enforced. dependency-cruiser reads every import (type-only
// ones too) and resolves it to a file; this script checks the rules below on that graph and, on top,
// that no two feature modules depend on each other, directly or through others (a cycle between
// folders of src/modules, which a file-level cycle check does not see). README "Code layout" explains
// the layers.
//   node scripts/check-imports.ts          exit 1 and list every violation
import { resolve } from 'node:path';
import { cruise, type ICruiseResult, type IForbiddenRuleType } from 'dependency-cruiser';

const ROOT = resolve(import.meta.dirname, '..');

/** Top-level files of src/ by layer. */
const TOP_FILES = '^src/(app|services|runtime|server|main|fastify-types)[.]ts$';
const UPPER_DIRS = '^src/(modules|http|web|cli|observability|background)/';

/**
 * The layers, bottom up: lib (and config) < db < modules < http, web, observability, background <
 * app, services, runtime, server, cli. An arrow may only point down (or sideways where allowed).
 */
export const RULES: IForbiddenRuleType[] = [
  {
    name: 'lib-is-the-bottom',
    comment: 'src/lib is shared by every layer: it imports nothing of the service (only node: and packages)',
    severity: 'error',
    from: { path: '^src/lib/' },
    to: { path: [UPPER_DIRS, TOP_FILES, '^src/db/', '^src/config[.]ts$'] },
  },
  {
    name: 'db-imports-down-only',
    comment: 'src/db (connections, migrations, transactions) may use src/lib and the config, nothing above',
    severity: 'error',
    from: { path: '^src/db/' },
    to: { path: [UPPER_DIRS, TOP_FILES] },
  },
  {
    name: 'modules-import-down-only',
    comment: 'features use lib, db and each other (without cycles); HTTP plumbing, pages, the CLI, background loops, metrics and the wiring sit above them',
    severity: 'error',
    from: { path: '^src/modules/' },
    to: { path: ['^src/(http|web|cli|observability|background)/', TOP_FILES] },
  },
  {
    name: 'events-imports-no-module',
    comment: 'events are the bottom of the features: the catalogue and the table, nothing else (the outbox module adds the fan-out)',
    severity: 'error',
    from: { path: '^src/modules/events/' },
    to: { path: '^src/modules/', pathNot: '^src/modules/events/' },
  },
  {
    name: 'http-imports-no-module',
    comment: 'src/http is request plumbing for any app: what it needs of the features (the webhooks document, services) comes in from src/app.ts',
    severity: 'error',
    from: { path: '^src/http/' },
    to: { path: ['^src/(modules|web|cli|observability|background)/', TOP_FILES] },
  },
  {
    name: 'web-below-the-wiring',
    comment: 'src/web (pages) sits beside src/http: it may use modules, never the CLI, the background loops or the wiring',
    severity: 'error',
    from: { path: '^src/web/' },
    to: { path: ['^src/(cli|background|observability)/', '^src/(app|runtime|server|main)[.]ts$'] },
  },
  {
    name: 'observability-only-subscribes',
    comment: 'metrics subscribe to the channels of src/lib/channels.ts; they import no module, and nothing but the wiring imports them',
    severity: 'error',
    from: { path: '^src/observability/' },
    to: { path: ['^src/(modules|http|web|cli|background)/', TOP_FILES] },
  },
  {
    name: 'background-below-the-wiring',
    comment: 'background loops are started by the runtime; they use services, not the HTTP app or the CLI',
    severity: 'error',
    from: { path: '^src/background/' },
    to: { path: ['^src/(http|web|cli|observability)/', '^src/(app|runtime|server|main)[.]ts$'] },
  },
  {
    name: 'no-file-cycles',
    comment: 'no import cycle between files of src/',
    severity: 'error',
    from: { path: '^src/' },
    to: { circular: true },
  },
  {
    name: 'resolvable',
    comment: 'every relative import resolves to a file (a typo, or a .ts import dependency-cruiser cannot follow, would hide edges)',
    severity: 'error',
    from: { path: '^src/' },
    // Packages are npm's business (some publish only an `exports` map dependency-cruiser's resolver does not read).
    to: { couldNotResolve: true, path: '^[.]{1,2}/' },
  },
];

/** The feature a src/modules file belongs to, if any. */
const featureOf = (path: string) => /^src\/modules\/([^/]+)\//.exec(path)?.[1];

/** Cycles between feature folders: the strongly connected components (Tarjan) of the folder graph with more than one folder. */
export function moduleCycles(result: ICruiseResult): Array<{ modules: string[]; edges: string[] }> {
  const graph = new Map<string, Map<string, string>>(); // feature -> dependency feature -> an example "file -> file"
  for (const m of result.modules) {
    const from = featureOf(m.source);
    if (!from) continue;
    if (!graph.has(from)) graph.set(from, new Map());
    for (const d of m.dependencies) {
      const to = featureOf(d.resolved);
      if (to && to !== from && !graph.get(from)!.has(to)) graph.get(from)!.set(to, `${m.source} -> ${d.resolved}`);
    }
  }
  let index = 0;
  const idx = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const components: string[][] = [];
  const visit = (v: string) => {
    idx.set(v, index);
    low.set(v, index++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v)?.keys() ?? []) {
      if (!idx.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, idx.get(w)!));
    }
    if (low.get(v) === idx.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1) components.push(component.sort());
    }
  };
  for (const v of [...graph.keys()].sort()) if (!idx.has(v)) visit(v);
  return components.map((modules) => ({
    modules,
    edges: modules.flatMap((a) => [...(graph.get(a) ?? [])].filter(([b]) => modules.includes(b)).map(([, example]) => example)),
  }));
}

export async function checkImports(): Promise<string[]> {
  const { output } = await cruise(['src'], {
    validate: true,
    ruleSet: { forbidden: RULES },
    // Type-only imports count: a type arrow upward couples the layers as much as a value one.
    tsPreCompilationDeps: true,
    doNotFollow: { path: 'node_modules' },
    baseDir: ROOT,
  });
  const result = output as ICruiseResult;
  const problems = (result.summary.violations ?? []).map(
    (v) => `${v.rule.name}: ${v.from} -> ${v.to}${v.cycle ? ` (cycle: ${v.cycle.map((c) => c.name).join(' -> ')})` : ''}`,
  );
  for (const c of moduleCycles(result)) problems.push(`module-cycle: ${c.modules.join(' <-> ')}\n    ${c.edges.join('\n    ')}`);
  if (result.modules.length < 50) problems.push(`only ${result.modules.length} files cruised: is dependency-cruiser resolving src/?`);
  return problems;
}

if (import.meta.main) {
  const problems = await checkImports();
  if (problems.length > 0) {
    console.error(`Import layering violated (see README "Code layout"):\n  ${problems.join('\n  ')}`);
    process.exitCode = 1;
  } else console.log('imports flow one way: no upward import, no cycle between modules');
}
