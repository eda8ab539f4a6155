import type { TrackingView } from './schemas.ts';

/**
 * The tracking page: one self-contained HTML document (inline style and script under a nonce CSP, no
 * outside asset, no favicon request), readable on a phone. While the delivery is under way a small
 * script fetches the same page every few seconds and swaps the #tracking section, so the server
 * renders everything in one place and the page works without JavaScript too (minus the refresh).
 */

const esc = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

const STATE_TEXT: Record<string, string> = {
  inProgress: 'Waiting for a courier',
  courierAssigned: 'Courier on the way to pick up',
  pickedUp: 'On its way to you',
  delivered: 'Delivered',
  returning: 'Going back to the sender',
  returned: 'Returned to the sender',
  cancelled: 'Cancelled',
};

const time = (isoTime: string) => `<time datetime="${esc(isoTime)}">${esc(isoTime.slice(0, 16).replace('T', ' '))} UTC</time>`;

function drawing(v: TrackingView): string {
  const { pickup, destination, courier } = v.map;
  const dot = (p: { x: number; y: number }, fill: string, label: string, id: string) =>
    `<g id="${id}"><circle cx="${p.x}" cy="${p.y}" r="3.2" fill="${fill}"/><text x="${p.x}" y="${p.y - 5}" font-size="5" text-anchor="middle" fill="#333">${esc(label)}</text></g>`;
  return `<svg class="map" viewBox="0 0 100 100" role="img" aria-label="Pickup, destination${courier ? ' and the courier' : ''}">
<rect x="0" y="0" width="100" height="100" rx="4" fill="#eef3f7"/>
<line x1="${pickup.x}" y1="${pickup.y}" x2="${destination.x}" y2="${destination.y}" stroke="#7a8b99" stroke-width="0.8" stroke-dasharray="2 2"/>
${dot(pickup, '#2b6cb0', v.pickup.city ? `From ${v.pickup.city}` : 'Pickup', 'map-pickup')}
${dot(destination, '#2f855a', v.destination.city ? `To ${v.destination.city}` : 'Destination', 'map-destination')}
${courier ? dot(courier, '#c05621', v.courier ? v.courier.firstName : 'Courier', 'map-courier') : ''}
</svg>`;
}

/** The part of the page that refreshes. */
export function trackingSection(v: TrackingView): string {
  const steps = v.timeline
    .map((e) => `<li data-state="${esc(e.state)}"><span class="label">${esc(e.label)}</span> ${time(e.occurredAt)}</li>`)
    .slice()
    .reverse()
    .join('\n');
  const route = [v.pickup.city, v.destination.city].every((c) => c === null)
    ? ''
    : `<p class="route">${esc(v.pickup.city ?? '?')} &rarr; ${esc(v.destination.city ?? '?')}</p>`;
  return `<section id="tracking" data-state="${esc(v.state)}" data-active="${v.active}">
<p class="from">Parcel from <strong>${esc(v.merchant.name)}</strong>${v.sandbox ? ' <span class="badge">sandbox</span>' : ''}</p>
<h1 id="state">${esc(STATE_TEXT[v.state] ?? v.state)}</h1>
${route}
${v.courier ? `<p class="courier">Courier: <strong>${esc(v.courier.firstName)}</strong></p>` : ''}
${drawing(v)}
<h2>Timeline</h2>
<ol id="timeline" reversed>
${steps}
</ol>
<p class="updated">Last change ${time(v.updatedAt)}${v.active ? ' &middot; this page updates itself' : ''}</p>
</section>`;
}

const STYLE = `
*{box-sizing:border-box}
body{margin:0;font:16px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1a202c;background:#f7fafc}
main{max-width:40rem;margin:0 auto;padding:1rem}
h1{font-size:1.5rem;margin:.25rem 0 .5rem}
h2{font-size:1.1rem;margin:1.25rem 0 .5rem}
.from,.route,.courier,.updated{margin:.25rem 0}
.updated{color:#4a5568;font-size:.85rem;margin-top:1rem}
.badge{background:#faf089;border-radius:.25rem;padding:0 .35rem;font-size:.8rem}
.map{display:block;width:100%;max-width:22rem;height:auto;margin:.75rem 0}
ol{list-style:none;padding:0;margin:0;border-left:3px solid #cbd5e0}
li{position:relative;padding:.35rem 0 .35rem 1rem}
li::before{content:"";position:absolute;left:-.45rem;top:.75rem;width:.6rem;height:.6rem;border-radius:50%;background:#2b6cb0}
li:first-child .label{font-weight:600}
time{display:block;color:#4a5568;font-size:.85rem}
.updated time{display:inline}
`;

/** The whole document. `nonce` authorises the inline style and script (and nothing else). */
export function trackingPage(v: TrackingView, nonce: string, refreshSeconds: number): string {
  const script = `
(function(){
  var every = ${Math.max(1, refreshSeconds) * 1000};
  function active(){ var s = document.getElementById('tracking'); return s && s.getAttribute('data-active') === 'true'; }
  function refresh(){
    if (!active()) return;
    fetch(location.pathname, { headers: { accept: 'text/html' }, cache: 'no-store' })
      .then(function(r){ return r.ok ? r.text() : null; })
      .then(function(html){
        if (html) {
          // Without its style and script: parsed here, they would run into this page's nonce (another page's nonce).
          html = html.replace(/<(style|script)[\\s\\S]*?<\\/\\1>/g, '');
          var next = new DOMParser().parseFromString(html, 'text/html').getElementById('tracking');
          var now = document.getElementById('tracking');
          if (next && now) now.replaceWith(document.importNode(next, true));
        }
      }, function(){})
      .then(function(){ setTimeout(refresh, every); });
  }
  setTimeout(refresh, every);
})();`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<title>Delivery from ${esc(v.merchant.name)}: ${esc(STATE_TEXT[v.state] ?? v.state)}</title>
<link rel="icon" href="data:,">
<style nonce="${nonce}">${STYLE}</style>
</head>
<body>
<main>
${trackingSection(v)}
</main>
<script nonce="${nonce}">${script}</script>
</body>
</html>
`;
}

export function notFoundPage(nonce: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<title>Tracking code not found</title>
<link rel="icon" href="data:,">
<style nonce="${nonce}">${STYLE}</style>
</head>
<body>
<main>
<h1>Tracking code not found</h1>
<p>No delivery has this tracking code. Check the link you received: it must be complete.</p>
</main>
</body>
</html>
`;
}

/** Only this page's own nonce'd style and script, and requests to this server. */
export const trackingCsp = (nonce: string) =>
  `default-src 'none'; script-src 'nonce-${nonce}'; style-src 'nonce-${nonce}'; img-src data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`;
