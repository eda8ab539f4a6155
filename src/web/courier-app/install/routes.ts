import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { asset } from '../../plugin.ts';
import { render } from '../../render.ts';

/**
 * What makes the courier app installable and usable through a moment without network: the web app
 * manifest, the service worker (scope /courier-app/: pages always from the network, an offline page
 * when there is none, static assets from its cache) and the offline page itself.
 */

/** The assets the service worker keeps (their URLs carry the content hash, so a new version is a new URL). */
const PRECACHE = ['app.css', 'app.js', 'courier.css', 'courier.js', 'courier-icon.png'].map(asset);
const SOURCE = readFileSync(join(import.meta.dirname, 'sw.js'), 'utf8');
/** The worker's text changes whenever an asset does, so browsers install the new one and drop the old cache. */
const WORKER = SOURCE.replace('__PRECACHE__', JSON.stringify(['/courier-app/offline', ...PRECACHE])).replace(
  '__VERSION__',
  createHash('sha256').update(SOURCE).update(PRECACHE.join()).digest('hex').slice(0, 12),
);

export const MANIFEST = {
  name: 'Courier',
  short_name: 'Courier',
  description: 'Go online, take jobs, collect and deliver parcels.',
  id: '/courier-app/',
  start_url: '/courier-app/shift',
  scope: '/courier-app/',
  display: 'standalone',
  orientation: 'portrait',
  background_color: '#ffffff',
  theme_color: '#0b3d91',
  icons: [
    { src: asset('courier-icon.png'), sizes: '192x192', type: 'image/png', purpose: 'any' },
    { src: asset('courier-icon-512.png'), sizes: '512x512', type: 'image/png', purpose: 'any' },
  ],
};

export async function installPages(app: FastifyInstance): Promise<void> {
  app.get('/manifest.webmanifest', async (_request, reply) =>
    reply.type('application/manifest+json').header('cache-control', 'no-cache').send(JSON.stringify(MANIFEST)),
  );

  app.get('/sw.js', async (_request, reply) =>
    // no-cache: the browser checks for a new worker on every visit.
    reply.type('text/javascript; charset=utf-8').header('cache-control', 'no-cache').send(WORKER),
  );

  app.get('/offline', async (_request, reply) => render(reply, 'courier-app/install/offline.eta', { title: 'No network' }));
}
