import { randomBytes } from 'node:crypto';

/**
 * GET / for people: a browser (Accept: text/html ahead of JSON) gets a small page naming the service
 * and linking to the API reference, the OpenAPI document and the tracking page format, under the same
 * strict nonce CSP as the tracking page (no script, no outside asset). API clients keep the JSON index.
 */

/** HTML only when the client lists text/html and lists it ahead of application/json (browsers do; curl and SDKs do not). */
export function prefersHtml(accept: string | undefined): boolean {
  const a = (accept ?? '').toLowerCase();
  const h = a.indexOf('text/html');
  if (h < 0) return false;
  const j = a.indexOf('application/json');
  return j < 0 || h < j;
}

export const homeCsp = (nonce: string) =>
  `default-src 'none'; style-src 'nonce-${nonce}'; img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`;

const STYLE = `
*{box-sizing:border-box}
body{margin:0;font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1a202c;background:#f7fafc}
main{max-width:40rem;margin:0 auto;padding:1.5rem 1rem}
h1{font-size:1.5rem;margin:0 0 .5rem}
a{color:#1a4f8b}
ul{padding-left:1.2rem}
li{margin:.35rem 0}
code{background:#edf2f7;border-radius:.2rem;padding:0 .25rem;font-size:.95em}
.muted{color:#4a5568}
`;

/** The page and the CSP nonce its style carries. */
export function homePage(): { html: string; nonce: string } {
  const nonce = randomBytes(16).toString('base64');
  const html = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Merchant Delivery Service</title>
<link rel="icon" href="data:,">
<style nonce="${nonce}">${STYLE}</style>
</head>
<body>
<main>
<h1>Merchant Delivery Service</h1>
<p>An HTTP JSON API for merchants: delivery quotes from their own warehouses, paid deliveries, couriers and signed webhooks.</p>
<ul>
<li><a href="/docs">API reference</a> (every endpoint, with examples)</li>
<li><a href="/openapi.json">OpenAPI 3.1 document</a> (<code>/openapi.json</code>, for client generators)</li>
<li>Tokens: <code>POST /auth/token</code> (OAuth 2.0 client credentials; <a href="/.well-known/oauth-authorization-server">discovery document</a>)</li>
<li>Recipients follow a delivery at <code>/track/{trackingCode}</code>: the <code>trackingUrl</code> of each transfer</li>
</ul>
<p class="muted">API clients asking for JSON get this index as JSON.</p>
</main>
</body>
</html>
`;
  return { html, nonce };
}
