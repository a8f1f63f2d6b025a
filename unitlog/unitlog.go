// Package unitlog keeps the output of runtime units through the API: when
// a unit (an event's worker or job, a container deploy item's run) ends,
// the controller that ran it keeps the last part of its output, at most a
// bounded tail, in a Secret owned by the unit's owner (api.UnitLogKey,
// api.UnitLogSecretName). The Secret counts in the namespace's bytes, is
// encrypted at rest, survives the loss of the host that ran the unit and
// goes with its owner. The API serves an ended unit's logs from it when
// the runtime no longer has them.
//
// It also holds the pure helpers that cut output: Tail (the bytes kept)
// and Lines (the few lines a failed status quotes).
package unitlog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"unicode/utf8"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/runtime"
)

// ErrNotKept: the API refused to keep a unit's output for good (the
// namespace is at its bytes or object limit, the store is full, the owner
// is gone): not worth retrying. Callers record it and go on.
var ErrNotKept = errors.New("unitlog: output not kept")

// minKeep is the smallest tail tried when the API finds an object too
// large.
const minKeep = 4 << 10

// Keeper keeps the output of units that ended. It is safe for concurrent
// use.
type Keeper struct {
	c   client.Interface
	rt  runtime.Runtime
	max int

	mu   sync.Mutex
	kept map[string]bool // unit IDs kept by this process
}

// New returns a Keeper reading output from rt and writing through c,
// keeping at most max bytes of each unit's output (<= 0:
// api.DefaultLogTailBytes).
func New(c client.Interface, rt runtime.Runtime, max int) *Keeper {
	if max <= 0 {
		max = api.DefaultLogTailBytes
	}
	return &Keeper{c: c, rt: rt, max: max, kept: map[string]bool{}}
}

// Max is how many bytes of a unit's output are kept.
func (k *Keeper) Max() int { return k.max }

func (k *Keeper) done(id string) {
	k.mu.Lock()
	k.kept[id] = true
	k.mu.Unlock()
}

// Kept reports whether this process already kept the unit's output (or
// was refused for good: ErrNotKept). It does not block.
func (k *Keeper) Kept(id string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.kept[id]
}

// Forget drops the memory that the unit's output was kept (its owner is
// gone). It does not block.
func (k *Keeper) Forget(id string) {
	k.mu.Lock()
	delete(k.kept, id)
	k.mu.Unlock()
}

// Keep reads the output of the ended unit id from the runtime and
// creates, in namespace ns, the Secret keeping its tail, owned by owner.
// It is idempotent: a Secret that exists already (a repeated call, a
// restart) is success. It blocks on the runtime's read and one or a few
// API writes (a tail the API finds too large is halved, down to 4 KiB).
// Errors: ErrNotKept (wrapping the API's refusal) when the API will not
// keep it; the runtime's (runtime.ErrNotFound: nothing to keep) and the
// API's other errors, worth retrying.
func (k *Keeper) Keep(ctx context.Context, ns string, owner api.OwnerReference, id string) error {
	if k.Kept(id) {
		return nil
	}
	out, err := k.read(ctx, id)
	if err != nil {
		return err
	}
	tail, cut := Tail(out, k.max)
	for {
		err = k.create(ctx, ns, owner, id, tail, cut)
		if api.ReasonOf(err) != api.ReasonTooLarge || len(tail) <= minKeep {
			break
		}
		tail, cut = Tail(tail, len(tail)/2)
	}
	switch r := api.ReasonOf(err); {
	case err == nil, r == api.ReasonAlreadyExists:
		k.done(id)
		return nil
	case r == api.ReasonTooLarge, r == api.ReasonInsufficientStorage, r == api.ReasonForbidden, r == api.ReasonInvalid,
		r == api.ReasonNotFound:
		k.done(id) // not tried again by this process
		return fmt.Errorf("%w: %s: %w", ErrNotKept, id, err)
	}
	return fmt.Errorf("unitlog: keep the output of %s: %w", id, err)
}

// read returns the unit's whole output as the runtime has it.
func (k *Keeper) read(ctx context.Context, id string) ([]byte, error) {
	rc, err := k.rt.Logs(ctx, id, runtime.LogOptions{})
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return ReadTail(rc, k.max)
}

// ReadTail reads r to its end and returns at least its last max bytes
// (at most about 2*max: cut them with Tail), holding no more meanwhile.
// It blocks on r. Errors: r's, but io.EOF.
func ReadTail(r io.Reader, max int) ([]byte, error) {
	var buf []byte
	chunk := make([]byte, 64<<10)
	for {
		n, err := r.Read(chunk)
		buf = append(buf, chunk[:n]...)
		if len(buf) > 2*max {
			buf = append(buf[:0], buf[len(buf)-max:]...)
		}
		if errors.Is(err, io.EOF) {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// create writes the Secret of unit id's tail. An empty tail is kept as
// "" (a nil one would be written as null, which a Secret's data refuses).
func (k *Keeper) create(ctx context.Context, ns string, owner api.OwnerReference, id string, tail []byte, cut bool) error {
	if tail == nil {
		tail = []byte{}
	}
	sec := &api.Secret{
		TypeMeta: api.TypeMeta{APIVersion: api.APIVersion, Kind: api.KindSecret},
		ObjectMeta: api.ObjectMeta{Name: api.UnitLogSecretName(id), Namespace: ns,
			Labels:          map[string]string{api.LabelUnitLog: "true"},
			Annotations:     map[string]string{api.AnnotationUnit: id, api.AnnotationLogTruncated: fmt.Sprint(cut)},
			OwnerReferences: []api.OwnerReference{owner}},
		Data: map[string][]byte{api.UnitLogKey: tail},
	}
	obj, err := api.FromResource(sec)
	if err != nil {
		return err
	}
	_, err = k.c.Create(ctx, obj)
	return err
}

// Tail returns the last max bytes of out (all of it when shorter),
// starting at a rune boundary, and whether anything was cut.
func Tail(out []byte, max int) ([]byte, bool) {
	if len(out) <= max {
		return out, false
	}
	t := out[len(out)-max:]
	for i := 0; i < len(t) && i < utf8.UTFMax && !utf8.RuneStart(t[0]); i++ {
		t = t[1:]
	}
	return t, true
}

// Lines returns the last n non-empty lines of out, joined by " | " and
// bounded to max bytes ("…" marks a cut), for a status that quotes a
// failed unit's output; "" when there is none.
func Lines(out []byte, n, max int) string {
	var lines []string
	for _, l := range bytes.Split(bytes.TrimRight(out, "\n"), []byte("\n")) {
		if s := strings.TrimSpace(string(l)); s != "" {
			lines = append(lines, s)
		}
	}
	if len(lines) > n {
		lines = append([]string{"…"}, lines[len(lines)-n:]...)
	}
	s := strings.Join(lines, " | ")
	if len(s) > max {
		t, _ := Tail([]byte(s), max)
		s = "…" + string(t)
	}
	return s
}
