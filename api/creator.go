package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
)

// AnnotationCreator records whom an object acts for: the principal whose
// authority its effects are checked against (the commands it makes cairn
// run, the objects it imports, reads or deletes). The server writes it on
// create, from the caller or, for an object an admin (a controller)
// creates under a controlling owner, from that owner; it keeps it on every
// update. Clients cannot write it: their value is replaced.
const AnnotationCreator = "cairn.dev/creator"

// Creator is the value of AnnotationCreator: a principal, as recorded.
type Creator struct {
	// Name is the principal's name ("admin", "event:ns/name").
	Name string `json:"name"`
	// Admin principals may do everything.
	Admin bool `json:"admin,omitempty"`
	// Scope is a worker token's scope ("namespace/event"), as in its
	// identity; empty for a user.
	Scope string `json:"scope,omitempty"`
	// Project is the project whose workerPermissions a worker principal
	// holds (its event's project when the object was created): what it may
	// do is read from that Project whenever it is checked.
	Project string `json:"project,omitempty"`
}

// String says who the principal is, for messages:
// `event:demo/e1 (project previews)`.
func (c Creator) String() string {
	if c.Project != "" {
		return fmt.Sprintf("%s (project %s)", c.Name, c.Project)
	}
	return c.Name
}

// Encode returns the annotation value of c (compact JSON).
func (c Creator) Encode() string {
	b, _ := json.Marshal(c) // strings and a bool: cannot fail
	return string(b)
}

// ParseCreator reads an AnnotationCreator value. Errors: BadRequest when
// it is not the JSON of a Creator with a name.
func ParseCreator(v string) (Creator, error) {
	var c Creator
	if err := json.Unmarshal([]byte(v), &c); err != nil || c.Name == "" {
		return Creator{}, NewBadRequest("annotation %s is not a creator record", AnnotationCreator)
	}
	return c, nil
}

// CreatorOf returns the creator recorded on o, and false when o has none
// (an object stored before cairn recorded creators) or an unreadable one.
func CreatorOf(o *ObjectMeta) (Creator, bool) {
	v, ok := o.Annotations[AnnotationCreator]
	if !ok {
		return Creator{}, false
	}
	c, err := ParseCreator(v)
	return c, err == nil
}

// OnBehalfOf names the object a controller acts for: a request carrying
// it is authorized as the caller AND as the creator recorded on that
// object, so that a controller never lends its own authority to a user's
// object (a Cleaner's deletions, an Installation's imports). It only
// restricts the requests that carry it.
type OnBehalfOf struct {
	Kind      string
	Namespace string
	Name      string
	// UID, when set, must be the object's: a deleted and re-created object
	// is another.
	UID string
}

// HeaderOnBehalfOf is the HTTP request header that carries an OnBehalfOf
// (see OnBehalfOf.Header).
const HeaderOnBehalfOf = "Cairn-On-Behalf-Of"

// Header is the value of HeaderOnBehalfOf for b: its fields as URL query
// parameters (kind, namespace, name, uid).
func (b OnBehalfOf) Header() string {
	return url.Values{"kind": {b.Kind}, "namespace": {b.Namespace}, "name": {b.Name}, "uid": {b.UID}}.Encode()
}

// String names the object for messages: `Cleaner demo/preview-42`.
func (b OnBehalfOf) String() string {
	return fmt.Sprintf("%s %s/%s", b.Kind, b.Namespace, b.Name)
}

// ParseOnBehalfOf reads the value of a HeaderOnBehalfOf. Errors:
// BadRequest when it lacks the kind or the name.
func ParseOnBehalfOf(v string) (OnBehalfOf, error) {
	q, err := url.ParseQuery(v)
	if err != nil {
		return OnBehalfOf{}, NewBadRequest("header %s: %v", HeaderOnBehalfOf, err)
	}
	b := OnBehalfOf{Kind: q.Get("kind"), Namespace: q.Get("namespace"), Name: q.Get("name"), UID: q.Get("uid")}
	if b.Kind == "" || b.Name == "" {
		return OnBehalfOf{}, NewBadRequest("header %s: kind and name are required", HeaderOnBehalfOf)
	}
	return b, nil
}

type onBehalfKey struct{}

// WithOnBehalfOf returns a context whose requests act for b (in-process:
// the registry reads it; over HTTP: the client sends HeaderOnBehalfOf).
func WithOnBehalfOf(ctx context.Context, b OnBehalfOf) context.Context {
	return context.WithValue(ctx, onBehalfKey{}, b)
}

// WithoutOnBehalfOf returns a context whose requests act for nobody: the
// reads a server makes for itself while it checks one that does.
func WithoutOnBehalfOf(ctx context.Context) context.Context {
	if _, ok := OnBehalfOfFrom(ctx); !ok {
		return ctx
	}
	return context.WithValue(ctx, onBehalfKey{}, nil)
}

// OnBehalfOfFrom returns the object ctx's requests act for, if any.
func OnBehalfOfFrom(ctx context.Context) (OnBehalfOf, bool) {
	b, ok := ctx.Value(onBehalfKey{}).(OnBehalfOf)
	return b, ok
}

// ActFor returns a context whose requests act for the object o of kind.
func ActFor(ctx context.Context, kind string, o *ObjectMeta) context.Context {
	return WithOnBehalfOf(ctx, OnBehalfOf{Kind: kind, Namespace: o.Namespace, Name: o.Name, UID: o.UID})
}

// CauseCreator is the StatusCause type of a request refused because the
// principal an object acts for (its creator) may not do it: the object's
// own effect is refused, not the caller.
const CauseCreator = "CreatorMayNot"

// NewCreatorForbidden is the Forbidden error saying that an object of kind
// acting for creator may not do what msg says.
func NewCreatorForbidden(kind string, creator Creator, msg string) *Status {
	st := NewStatus(ReasonForbidden, "the %s acts for its creator %s, and %s", kind, creator, msg)
	st.Details = &StatusDetails{Causes: []StatusCause{{Type: CauseCreator, Message: msg}}}
	return st
}

// IsCreatorForbidden reports whether err is, or wraps, a refusal of what
// an object would do for its creator (NewCreatorForbidden), whether it was
// made in-process or over HTTP.
func IsCreatorForbidden(err error) bool {
	var st *Status
	if !errors.As(err, &st) || st.Reason != ReasonForbidden || st.Details == nil {
		return false
	}
	for _, c := range st.Details.Causes {
		if c.Type == CauseCreator {
			return true
		}
	}
	return false
}

// AnnotationDeletionProtection set to "true" on any object makes every
// deletion of it fail (Forbidden naming the annotation), whoever asks and
// whatever the options (force included): a user's, a Cleaner's, the
// garbage collector's, a namespace's. It blocks the cascades that would
// take it (its owners', its namespace's) until it is removed or set to
// "false". Any other value is refused (Invalid).
const AnnotationDeletionProtection = "cairn.dev/deletion-protection"

// Protected reports whether o is protected from deletion.
func Protected(o *ObjectMeta) bool { return o.Annotations[AnnotationDeletionProtection] == "true" }

// NewProtected is the error refusing to delete (or remove) the protected
// object name of kind.
func NewProtected(kind, name string) *Status {
	return NewForbidden(kind, name, fmt.Sprintf("it is protected from deletion by the annotation %s: \"true\"; remove it (or set it to \"false\") to let the deletion go on",
		AnnotationDeletionProtection))
}
