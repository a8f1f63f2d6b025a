// Phases of every family, told apart by text and by class (colour).
// Pure functions over objects; no DOM but badge().
import { h } from './dom.js';

// Landscaper phases (Installation, Execution, DeployItem) and Brigade's
// (Event worker and jobs), and the Cleaner's.
const failing = new Set(['Failed', 'Aborted', 'FAILED', 'ABORTED', 'TIMED_OUT', 'SCHEDULING_FAILED', 'UNKNOWN']);
const progressing = new Set(['Init', 'PendingDependencies', 'Progressing', 'Deleting', 'PENDING', 'STARTING', 'RUNNING', 'Waiting', 'Pending']);
const succeeded = new Set(['Succeeded', 'SUCCEEDED', 'Ready', 'Reachable']);
const terminalEvent = new Set(['SUCCEEDED', 'FAILED', 'CANCELED', 'ABORTED', 'TIMED_OUT', 'SCHEDULING_FAILED']);

// phaseOf returns the phase an object shows: status.phase, an Event's
// worker phase, a Target's Reachable condition, or "" when it has none.
export function phaseOf(o) {
  const s = o && o.status || {};
  if (o && o.kind === 'Event') return (s.worker && s.worker.phase) || 'PENDING';
  if (s.phase) return s.phase;
  if (Array.isArray(s.conditions)) {
    const r = s.conditions.find(c => c.type === 'Reachable');
    if (r) return r.status === 'True' ? 'Reachable' : 'Unreachable';
  }
  return '';
}

// classOf is the colour class of a phase: failed, progress, ok, other.
export function classOf(phase) {
  if (failing.has(phase) || phase === 'Unreachable') return 'failed';
  if (progressing.has(phase)) return 'progress';
  if (succeeded.has(phase)) return 'ok';
  return 'other';
}

// isTerminalEvent reports whether an Event (or job) phase is final.
export function isTerminalEvent(phase) { return terminalEvent.has(phase); }

// isFailing reports whether o failed, carries a lastError, or is stuck:
// being deleted for more than a minute.
export function isFailing(o, now = Date.now()) {
  const p = phaseOf(o);
  if (classOf(p) === 'failed') return true;
  const s = o.status || {};
  if (s.lastError && s.lastError.message && classOf(p) !== 'ok') return true;
  return isStuck(o, now);
}

// isStuck reports whether o has been being deleted for over a minute.
export function isStuck(o, now = Date.now()) {
  const d = o.metadata && o.metadata.deletionTimestamp;
  return !!d && now - Date.parse(d) > 60_000;
}

// badge is a phase shown by text and colour.
export function badge(phase) {
  const text = phase || 'no phase';
  return h('span', { class: 'badge ' + classOf(phase), title: 'phase: ' + text }, text);
}
