// The operator console's live parts (the pages work without it): an element with data-refresh="N"
// is fetched again every N seconds and swapped in place, like the tracking page's refresh.
(() => {
  for (const el of document.querySelectorAll('[data-refresh]')) {
    const seconds = Math.max(5, Number(el.getAttribute('data-refresh')) || 10);
    setInterval(async () => {
      if (document.hidden) return;
      try {
        const res = await fetch(window.location.href, { headers: { accept: 'text/html' }, credentials: 'same-origin' });
        if (!res.ok) return;
        const doc = new DOMParser().parseFromString(await res.text(), 'text/html');
        const fresh = doc.getElementById(el.id);
        if (fresh) el.innerHTML = fresh.innerHTML;
      } catch {
        // offline for a moment: the next tick tries again
      }
    }, seconds * 1000);
  }
})();
