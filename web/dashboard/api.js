// The REST API as the dashboard calls it: every request carries the bearer token, when one was
// given (typed into the form, or passed once as /ui/#token=TOKEN and then kept in this
// browser's local storage), and a 401 or 403 becomes an AuthError the page answers with the
// token form.
const TOKEN_KEY = 'tessera.dashboard.token';

export class AuthError extends Error {}

// Moves a token from the URL fragment (#token=T, possibly followed by &/route) into storage,
// and removes it from the address bar and history.
export function takeTokenFromFragment() {
  const m = location.hash.match(/^#token=([^&]*)&?(.*)$/);
  if (!m) return;
  setToken(decodeURIComponent(m[1]));
  const rest = m[2] ? '#' + m[2] : '';
  history.replaceState(null, '', location.pathname + location.search + rest);
}

export function token() { return localStorage.getItem(TOKEN_KEY) || ''; }
export function setToken(t) {
  if (t) localStorage.setItem(TOKEN_KEY, t); else localStorage.removeItem(TOKEN_KEY);
}

async function request(path, { as = 'json', signal } = {}) {
  const headers = {};
  const t = token();
  if (t) headers.Authorization = 'Bearer ' + t;
  const res = await fetch(path, { headers, signal, cache: 'no-store' });
  if (res.status === 401 || res.status === 403) {
    throw new AuthError(res.status === 401 ? 'the controller asks for a bearer token'
                                           : 'this token may not read ' + path);
  }
  if (!res.ok) {
    let message = res.status + ' ' + res.statusText;
    try { message = (await res.json()).error.message; } catch (_) { /* not JSON */ }
    const e = new Error(message);
    e.status = res.status;
    throw e;
  }
  return as === 'response' ? res : as === 'text' ? res.text() : res.json();
}

export const get = (path, opts) => request(path, opts);
// The Response itself (checked as get() does), for its headers.
export const getResponse = (path, opts) => request(path, { ...opts, as: 'response' });

// "queue/sub" + "name" -> "/v1/jobs/queue/sub/name" with each segment escaped.
export function jobPath(prefix, queue, name) {
  return prefix + queue.split('/').map(encodeURIComponent).join('/') + '/' + encodeURIComponent(name);
}
