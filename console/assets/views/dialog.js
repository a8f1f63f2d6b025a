// A confirmation dialog and a notice line, in the page (no window.confirm).
import { h } from '../dom.js';

// confirmAction asks question; it resolves true when the user confirms.
export function confirmAction(question, confirmLabel) {
  return new Promise(resolve => {
    const d = h('dialog', { id: 'confirm', 'aria-labelledby': 'confirm-q' },
      h('p', { id: 'confirm-q' }, question),
      h('form', { method: 'dialog' },
        h('button', { id: 'confirm-no', value: 'no', type: 'submit' }, 'Keep it'),
        h('button', { id: 'confirm-yes', value: 'yes', type: 'submit', class: 'danger' }, confirmLabel)));
    d.addEventListener('close', () => { resolve(d.returnValue === 'yes'); d.remove(); });
    document.body.append(d);
    d.showModal();
    d.querySelector('#confirm-no').focus();
  });
}

// notify shows a short message at the bottom of the page.
export function notify(text, isError) {
  let n = document.getElementById('notice');
  if (!n) { n = h('div', { id: 'notice', role: 'status' }); document.body.append(n); }
  n.className = isError ? 'error' : '';
  n.textContent = text;
}

// act runs f (an API call), telling the user what happened.
export async function act(what, f) {
  try {
    await f();
    notify(what + ': requested.');
  } catch (e) {
    notify(what + ' failed: ' + e.message, true);
  }
}
