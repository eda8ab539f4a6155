// The courier app's small client (every page still reads and submits without it):
// - while online, sends the phone's position every data-send-interval ms to /courier-app/shift/location;
// - says when location is denied, or the last fix is stale;
// - without network keeps only the latest point: sends it again when the network is back, or drops it
//   as stale when it is older than data-stale-after ms;
// - the "Go online" form gets the position before it is sent;
// - a code or form sent without network is kept on the page and marked "not sent".
(() => {
  const shift = document.getElementById('shift');
  const stateEl = document.getElementById('location-state');
  const geo = navigator.geolocation;
  const banner = document.createElement('p');
  banner.className = 'net-state';
  banner.setAttribute('role', 'status');
  banner.hidden = true;
  document.body.prepend(banner);

  const showNetwork = () => {
    banner.hidden = navigator.onLine;
    banner.textContent = navigator.onLine ? '' : 'Offline: nothing is being sent until the network is back.';
  };
  window.addEventListener('online', showNetwork);
  window.addEventListener('offline', showNetwork);
  showNetwork();

  const say = (text, problem) => {
    if (!stateEl) return;
    stateEl.textContent = text;
    stateEl.classList.toggle('problem', Boolean(problem));
  };
  const clock = (ms) => new Date(ms).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', second: '2-digit' });

  // "Go online": read the position first; refuse with a clear message when location is denied.
  for (const form of document.querySelectorAll('form[data-needs-position]')) {
    form.addEventListener('submit', (event) => {
      if (form.dataset.positioned === 'true') return;
      event.preventDefault();
      event.stopPropagation(); // not yet a submission (app.js would count it as one)
      if (!geo) return say('This browser cannot share a position: the app needs it to go online.', true);
      say('Reading your position…');
      geo.getCurrentPosition(
        (p) => {
          form.elements.lat.value = String(p.coords.latitude);
          form.elements.lng.value = String(p.coords.longitude);
          form.dataset.positioned = 'true';
          form.requestSubmit();
        },
        (err) =>
          say(
            err.code === 1
              ? 'Location is denied: allow location for this site in your browser settings to go online.'
              : 'Your position is not available right now: try again outside or in a moment.',
            true,
          ),
        { enableHighAccuracy: true, timeout: 15000, maximumAge: 10000 },
      );
    });
  }

  // While online: send the position at the app's interval.
  if (shift && shift.dataset.online === 'true' && geo) {
    const interval = Number(shift.dataset.sendInterval) || 5000;
    const staleAfter = Number(shift.dataset.staleAfter) || 60000;
    const csrf = shift.dataset.csrf;
    let latest = null; // { lat, lng, at } the newest fix
    let pending = null; // a fix not sent yet (no network)
    let lastSent = 0;
    let dropped = ''; // what the page says about a point dropped as stale

    const send = async (point) => {
      try {
        const res = await fetch('/courier-app/shift/location', {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-csrf-token': csrf },
          body: JSON.stringify({ lat: point.lat, lng: point.lng }),
          credentials: 'same-origin',
        });
        if (res.status === 204) {
          lastSent = Date.now();
          pending = null;
          say(`Position sent at ${clock(lastSent)}.`);
        } else if (res.status === 409) {
          say('You are offline in the app: go online to share your position.', true);
        } else if (res.status === 303 || res.redirected || res.status === 403) {
          say('Your session ended: log in again.', true);
        } else {
          pending = point;
        }
      } catch {
        pending = point; // no network: keep the newest point only
        say(`Not sent: no network. The last position (${clock(point.at)}) is sent when the network is back.`, true);
      }
    };

    const tick = () => {
      const now = Date.now();
      if (pending && now - pending.at > staleAfter) {
        dropped = `The position from ${clock(pending.at)}, kept while offline, was dropped: too old to send.`;
        pending = null;
      }
      if (!latest) return;
      if (now - latest.at > staleAfter) {
        say(`Position is stale: the last fix is from ${clock(latest.at)}. Check that location is on.${dropped ? ` ${dropped}` : ''}`, true);
        return;
      }
      dropped = '';
      if (!navigator.onLine) {
        pending = latest;
        say(`Not sent: no network. The last position (${clock(latest.at)}) is sent when the network is back.`, true);
        return;
      }
      if (now - lastSent >= interval) send(latest);
    };

    geo.watchPosition(
      (p) => {
        latest = { lat: p.coords.latitude, lng: p.coords.longitude, at: Date.now() };
        tick();
      },
      (err) => {
        if (err.code === 1) say('Location is denied: allow location for this site, or recipients and dispatch cannot see where you are.', true);
        else say('Your position is not available right now.', true);
      },
      { enableHighAccuracy: true, maximumAge: 5000 },
    );
    setInterval(tick, 1000);
    window.addEventListener('online', () => {
      if (pending && Date.now() - pending.at <= staleAfter) send(pending);
      else if (pending) {
        pending = null;
        say('The position kept while offline was too old and was dropped.', true);
      }
    });
  }

  // Codes and job forms: without network, keep what was typed and say it was not sent.
  for (const form of document.querySelectorAll('form[data-code-form]')) {
    const note = form.querySelector('.not-sent');
    form.addEventListener('submit', (event) => {
      if (navigator.onLine) return;
      event.preventDefault();
      event.stopPropagation(); // not sent, so not a submission (app.js would block the next press)
      if (note) {
        note.hidden = false;
        note.textContent = 'Not sent: you are offline. What you entered is kept here; press the button again when the network is back.';
      }
    });
    window.addEventListener('online', () => {
      if (note && !note.hidden) note.textContent = 'The network is back: what you entered has still not been sent. Press the button to send it.';
    });
  }

  // Offers: new cards arrive through the session's event stream; each counts down and goes away with a message when it expires.
  const offers = document.getElementById('offers');
  if (offers) {
    const list = document.getElementById('offer-list');
    const note = document.getElementById('offers-note');
    const empty = offers.querySelector('.offers-empty');
    const csrf = offers.dataset.csrf;
    const refresh = () => {
      if (empty) empty.hidden = list.children.length > 0;
    };
    const el = (tag, attrs, ...children) => {
      const e = document.createElement(tag);
      for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
      for (const c of children) e.append(c);
      return e;
    };
    const fact = (term, value, cls) => el('div', {}, el('dt', {}, term), el('dd', cls ? { class: cls } : {}, value));
    const decision = (id, what, label, cls) =>
      el(
        'form',
        { method: 'post', action: `/courier-app/offers/${id}/${what}` },
        el('input', { type: 'hidden', name: '_csrf', value: csrf }),
        el('button', { type: 'submit', class: cls }, label),
      );
    // The same card the server renders (offers/cards.eta), built with text nodes only.
    const card = (o) => {
      const seconds = el('span', { 'data-countdown': '' }, String(o.secondsLeft));
      const left = el('dd', { class: 'countdown' }, seconds, ' s');
      const li = el(
        'li',
        { class: 'card offer-card', 'data-offer-id': o.id, 'data-seconds-left': String(o.secondsLeft), 'data-pickup': o.pickupName },
        el('h3', {}, o.pickupName),
        el(
          'dl',
          { class: 'facts' },
          fact('Pickup', `${o.pickupAddress}, ${o.distanceKm} km from you`),
          fact('To', `${o.destinationArea}, ${o.deliveryDistanceKm} km`),
          fact('Payout', o.payout, 'payout'),
          el('div', {}, el('dt', {}, 'Time left'), left),
        ),
        decision(o.id, 'accept', 'Accept', 'big'),
        decision(o.id, 'decline', 'Decline', 'big secondary'),
      );
      return li;
    };
    const deadlines = new Map();
    const track = (li) => deadlines.set(li, Date.now() + Number(li.dataset.secondsLeft) * 1000);
    for (const li of list.querySelectorAll('li[data-offer-id]')) track(li);
    setInterval(() => {
      const now = Date.now();
      for (const [li, deadline] of deadlines) {
        const left = Math.max(0, Math.ceil((deadline - now) / 1000));
        const span = li.querySelector('[data-countdown]');
        if (span) span.textContent = String(left);
        if (left === 0) {
          deadlines.delete(li);
          li.remove();
          note.textContent = `The offer from ${li.dataset.pickup} expired: it went to another courier.`;
          refresh();
        }
      }
    }, 1000);
    if (window.EventSource) {
      const stream = new EventSource(offers.dataset.stream);
      stream.addEventListener('offer', (event) => {
        const o = JSON.parse(event.data);
        if (o.secondsLeft <= 0 || list.querySelector(`li[data-offer-id="${CSS.escape(o.id)}"]`)) return;
        const li = card(o);
        list.append(li);
        track(li);
        note.textContent = `New offer from ${o.pickupName}: ${o.payout}.`;
        refresh();
      });
    }
  }

  if ('serviceWorker' in navigator) navigator.serviceWorker.register('/courier-app/sw.js', { scope: '/courier-app/' }).catch(() => {});
})();
