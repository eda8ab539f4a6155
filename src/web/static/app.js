// Small enhancements for the web apps (every page works without this script).
// Forms with data-confirm ask before submitting (e.g. removing a user, disabling a warehouse).
document.addEventListener('submit', (event) => {
  const form = event.target;
  if (!(form instanceof HTMLFormElement)) return;
  const message = form.dataset.confirm;
  if (message && !window.confirm(message)) {
    event.preventDefault();
    return;
  }
  // One submission per form: a double click sends one request, not two.
  if (form.dataset.submitted === 'true') {
    event.preventDefault();
    return;
  }
  form.dataset.submitted = 'true';
  setTimeout(() => {
    form.dataset.submitted = 'false';
  }, 5000);
});
// A "copy" button next to a secret or a link.
document.addEventListener('click', (event) => {
  const button = event.target instanceof Element ? event.target.closest('button[data-copy]') : null;
  if (!button) return;
  const source = document.getElementById(button.dataset.copy);
  if (!source || !navigator.clipboard) return;
  navigator.clipboard.writeText(source.textContent.trim()).then(() => {
    button.textContent = 'Copied';
  });
});
