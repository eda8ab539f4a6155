// The courier app's service worker (scope /courier-app/). Pages always come from the network (they
// show live jobs and must never be stale); without network a page is the cached offline page, which
// says that nothing was sent. Static assets (content-hashed URLs) come from the cache first.
const CACHE = 'courier-__VERSION__';
const PRECACHE = __PRECACHE__;
const OFFLINE = '/courier-app/offline';

self.addEventListener('install', (event) => {
  event.waitUntil(
    caches
      .open(CACHE)
      .then((cache) => cache.addAll(PRECACHE))
      .then(() => self.skipWaiting()),
  );
});

self.addEventListener('activate', (event) => {
  event.waitUntil(
    caches
      .keys()
      .then((keys) => Promise.all(keys.filter((k) => k.startsWith('courier-') && k !== CACHE).map((k) => caches.delete(k))))
      .then(() => self.clients.claim()),
  );
});

self.addEventListener('fetch', (event) => {
  const request = event.request;
  const url = new URL(request.url);
  if (url.origin !== self.location.origin) return;
  if (request.mode === 'navigate') {
    // GET and POST alike: a form sent without network lands on the page that says it was not sent.
    event.respondWith(fetch(request).catch(() => caches.match(OFFLINE)));
    return;
  }
  if (request.method === 'GET' && url.pathname.startsWith('/static/')) {
    event.respondWith(caches.match(request).then((hit) => hit || fetch(request)));
  }
});
