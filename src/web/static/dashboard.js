// The dashboard's enhancements (every page works without them): times in the viewer's zone (the UTC
// time stays in the title, shown on hover), and the zone's offset sent with date filters so a
// "from 1 November" means the viewer's 1 November.
(() => {
  const local = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });
  for (const el of document.querySelectorAll('main time[datetime]')) {
    const at = new Date(el.getAttribute('datetime'));
    if (!Number.isNaN(at.getTime())) el.textContent = local.format(at);
  }
  const offset = String(new Date().getTimezoneOffset());
  for (const input of document.querySelectorAll('input[data-tz]')) input.value = offset;
})();
