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

/** Events closer than this to a neighbour show seconds, so their order is visible. */
const CLOSE_MS = 2 * 60_000;

/**
 * A time as the server renders it (no JavaScript: UTC, to the minute or, when `seconds`, the second),
 * with the exact UTC time in `datetime` and as the hover title. The page's script rewrites the text in
 * the reader's own time zone (data-seconds says whether to show seconds).
 */
const time = (isoTime: string, seconds: boolean) =>
  `<time datetime="${esc(isoTime)}" title="${esc(isoTime)}"${seconds ? ' data-seconds' : ''}>${esc(isoTime.slice(0, seconds ? 19 : 16).replace('T', ' '))} UTC</time>`;

/** For each timeline entry: whether it lies within CLOSE_MS of the entry before or after it. */
function closeToNeighbour(times: string[]): boolean[] {
  const ms = times.map((t) => Date.parse(t));
  return ms.map((t, i) => (i > 0 && Math.abs(t - ms[i - 1]) < CLOSE_MS) || (i < ms.length - 1 && Math.abs(ms[i + 1] - t) < CLOSE_MS));
}

function drawing(v: TrackingView): string {
  const { pickup, destination, courier } = v.map;
  // Place names above their dots, the courier's below its own: the courier stands on a place (the pickup,
  // the door) at least twice a delivery, and the two names must not print over each other.
  const dot = (p: { x: number; y: number }, fill: string, label: string, id: string, below = false) =>
    `<g id="${id}"><circle cx="${p.x}" cy="${p.y}" r="3.2" fill="${fill}"/><text x="${p.x}" y="${below ? p.y + 9 : p.y - 5}" font-size="5" text-anchor="middle" fill="#333">${esc(label)}</text></g>`;
  // aria-live off: the courier's dot moving is not news to read out (the state and timeline are).
  return `<svg class="map" viewBox="0 0 100 100" role="img" aria-live="off" aria-label="Pickup, destination${courier ? ' and the courier' : ''}">
<rect x="0" y="0" width="100" height="100" rx="4" fill="#eef3f7"/>
<line x1="${pickup.x}" y1="${pickup.y}" x2="${destination.x}" y2="${destination.y}" stroke="#7a8b99" stroke-width="0.8" stroke-dasharray="2 2"/>
${dot(pickup, '#2b6cb0', v.pickup.city ? `From ${v.pickup.city}` : 'Pickup', 'map-pickup')}
${dot(destination, '#2f855a', v.destination.city ? `To ${v.destination.city}` : 'Destination', 'map-destination')}
${courier ? dot(courier, '#c05621', v.courier ? v.courier.firstName : 'Courier', 'map-courier', true) : ''}
</svg>`;
}

/** The part of the page that refreshes. */
export function trackingSection(v: TrackingView): string {
  const close = closeToNeighbour(v.timeline.map((e) => e.occurredAt));
  const steps = v.timeline
    .map((e, i) => `<li data-state="${esc(e.state)}"><span class="label">${esc(e.label)}</span> ${time(e.occurredAt, close[i])}</li>`)
    .slice()
    .reverse()
    .join('\n');
  const lastChangeSeconds = close.at(-1) ?? false;
  // Every part is always there (hidden when empty), so a refresh swaps parts in place.
  const route = [v.pickup.city, v.destination.city].every((c) => c === null)
    ? '<p class="route" hidden></p>'
    : `<p class="route">${esc(v.pickup.city ?? '?')} &rarr; ${esc(v.destination.city ?? '?')}</p>`;
  return `<section id="tracking" data-state="${esc(v.state)}" data-active="${v.active}" aria-live="polite">
<p class="from">Parcel from <strong>${esc(v.merchant.name)}</strong>${v.sandbox ? ' <span class="badge">sandbox</span>' : ''}</p>
<h1 id="state">${esc(STATE_TEXT[v.state] ?? v.state)}</h1>
${route}
${v.courier ? `<p class="courier">Courier: <strong>${esc(v.courier.firstName)}</strong></p>` : '<p class="courier" hidden></p>'}
${v.estimatedDeliveryAt ? `<p class="expected">Expected delivery ${time(v.estimatedDeliveryAt, false)}</p>` : '<p class="expected" hidden></p>'}
${drawing(v)}
<h2>Timeline</h2>
<ol id="timeline" reversed>
${steps}
</ol>
<p class="updated">Last change ${time(v.updatedAt, lastChangeSeconds)}${v.active ? ' &middot; this page updates itself' : ''}</p>
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
  // Times in the reader's own time zone (the exact UTC time stays in datetime and the title).
  function localTimes(root){
    var times = root.querySelectorAll('time[datetime]');
    for (var i = 0; i < times.length; i++) {
      var t = times[i], d = new Date(t.getAttribute('datetime'));
      if (isNaN(d.getTime())) continue;
      var o = { year: 'numeric', month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', timeZoneName: 'short' };
      if (t.hasAttribute('data-seconds')) o.second = '2-digit';
      try { t.textContent = d.toLocaleString(undefined, o); } catch (e) {}
    }
  }
  // The section is the live region (aria-live=polite): it stays, and only what changed is swapped in,
  // so a screen reader announces the new state and the new timeline entries, not the whole page.
  var shown = null;
  function update(next){
    var now = document.getElementById('tracking');
    if (!now || !next) return;
    localTimes(next);
    for (var a = 0; a < next.attributes.length; a++) now.setAttribute(next.attributes[a].name, next.attributes[a].value);
    var kids = next.children, old = shown ? shown.children : [];
    if (!shown || old.length !== kids.length) { now.replaceChildren.apply(now, Array.prototype.map.call(kids, function(k){ return document.importNode(k, true); })); }
    else for (var i = 0; i < kids.length; i++) {
      if (kids[i].outerHTML === old[i].outerHTML) continue;
      var cur = now.children[i];
      if (kids[i].id === 'timeline') {
        // New entries come at the top; the ones already shown keep their nodes (not read out again),
        // and a time that now needs its seconds (a close new neighbour) is redrawn.
        var want = kids[i].children, fresh = want.length - cur.children.length;
        if (fresh < 0) { cur.replaceWith(document.importNode(kids[i], true)); continue; }
        for (var j = fresh - 1; j >= 0; j--) cur.insertBefore(document.importNode(want[j], true), cur.firstChild);
        for (var k = fresh; k < want.length; k++) {
          var was = cur.children[k].querySelector('time'), is = want[k].querySelector('time');
          if (was && is && was.hasAttribute('data-seconds') !== is.hasAttribute('data-seconds')) was.replaceWith(document.importNode(is, true));
        }
      } else cur.replaceWith(document.importNode(kids[i], true));
    }
    shown = next;
  }
  function refresh(){
    if (!active()) return;
    fetch(location.pathname, { headers: { accept: 'text/html' }, cache: 'no-store' })
      .then(function(r){ return r.ok ? r.text() : null; })
      .then(function(html){
        if (html) {
          // Without its style and script: parsed here, they would run into this page's nonce (another page's nonce).
          html = html.replace(/<(style|script)[\\s\\S]*?<\\/\\1>/g, '');
          update(new DOMParser().parseFromString(html, 'text/html').getElementById('tracking'));
        }
      }, function(){})
      .then(function(){ setTimeout(refresh, every); });
  }
  var first = document.getElementById('tracking');
  if (first) { localTimes(first); shown = first.cloneNode(true); }
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
