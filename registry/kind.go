package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/authz"
	"cairn.dev/cairn/store"
)

// Kind is everything the registry knows about one kind: how it is addressed,
// how objects are decoded, defaulted and validated, who may do what with
// them, how they print, and the extra endpoints it serves. It is the single
// registration point of a kind; build one with Define.
type Kind struct {
	api.KindInfo
	// Encrypted kinds are stored encrypted at rest (AES-GCM).
	Encrypted bool
	// Actions are kind-specific endpoints (cancel, jobs, logs, trace, ...).
	Actions []Action
	// Fields are the top-level fields of the kind's objects besides
	// apiVersion, kind and metadata (Spec.Fields). Any other top-level
	// field is refused, names being case-sensitive.
	Fields []string
	// GoType is the kind's Go struct type (api.Secret for the Secret
	// kind), from which its schemas are derived.
	GoType reflect.Type

	// fieldsErr is set when Spec.Fields does not match the Go type; New
	// refuses the kind.
	fieldsErr error

	// authorize is the kind's authorization rule (Spec.Authorize), or nil.
	authorize authz.Rule
	// acts is true for kinds whose objects act for their creator
	// (Spec.Acts): only they record one (creator.go).
	acts bool
	// removeWrites is Spec.RemoveWrites, or nil.
	removeWrites RemoveHook
	// prepare decodes obj strictly into the typed kind, applies the hook of
	// adm.Op, defaults and validates it, and returns the normalized generic
	// object. old is nil on create.
	prepare func(ctx context.Context, adm *Admission, obj, old *api.Object) (*api.Object, field.ErrorList, error)
}

// Spec is the typed definition of a kind, turned into a Kind by Define.
// T is a pointer to the kind's struct, e.g. *api.Secret. Every hook is
// optional. The hooks that get an *Admission run on every attempt of a
// write (a write that loses a race is planned again), so they must not
// write anything themselves; they may read other objects through
// Admission.Get.
type Spec[T api.Resource] struct {
	Kind       string
	Namespaced bool
	ShortNames []string
	// Categories are the kind's discovery categories besides "cairn",
	// which every kind is in (e.g. "all").
	Categories   []string
	Columns      []api.Column
	Subresources []string
	Encrypted    bool
	// Sensitive names the top-level fields whose values are secret; it is
	// published in discovery so that printers redact them.
	Sensitive []string
	// Fields declares the top-level fields of the kind besides apiVersion,
	// kind and metadata (e.g. spec and status; a Secret's data, stringData
	// and type). They must be exactly the JSON fields of T; nil takes
	// those. Objects with any other top-level field are refused.
	Fields  []string
	Actions []Action

	// Authorize grants (or denies) callers other than admins the verbs on
	// objects of this kind, including its actions' verbs (see authz). With
	// no rule, only admins and the registry's global rules decide.
	Authorize authz.Rule

	// Precheck inspects the generic object before it is decoded into T,
	// for field errors the JSON decoder cannot place (e.g. bad base64).
	Precheck func(obj *api.Object) field.ErrorList
	// Default fills unset fields; it runs before validation on every write.
	Default func(obj T)
	// Validate checks an object on create and update.
	Validate func(ctx context.Context, adm *Admission, obj T) field.ErrorList
	// ValidateUpdate checks what may change between old and obj.
	ValidateUpdate func(ctx context.Context, adm *Admission, obj, old T) field.ErrorList
	// ValidateStatus checks a status write.
	ValidateStatus func(ctx context.Context, adm *Admission, obj T) field.ErrorList
	// PrepareForCreate adjusts a new object after the registry reset its
	// server-set fields (e.g. an initial status, or a copy of another
	// object read with adm.Get). An error fails the create as it is (an
	// *api.Status, or an internal error).
	PrepareForCreate func(ctx context.Context, adm *Admission, obj T) error
	// PrepareForUpdate adjusts an update (e.g. merging write-only fields).
	PrepareForUpdate func(ctx context.Context, adm *Admission, obj, old T) error
	// PrepareForDelete adjusts an object being marked for deletion.
	PrepareForDelete func(ctx context.Context, adm *Admission, obj T) error
	// Acts lists what an object makes cairn do for its creator, as
	// requests of that principal (Verb, Kind and Name; the registry fills
	// the Namespace and the User): run on DeployItem for a command it
	// runs, get on a Secret it imports, delete on a target. On create, and
	// for what an update adds, each must be allowed to the object's
	// creator (api.AnnotationCreator), or the write is Forbidden.
	Acts func(obj T) []authz.Attributes
	// PrepareForStatusUpdate checks (or adjusts) a status write against the
	// stored object, e.g. the transitions a status may make. An error fails
	// the write as it is (an *api.Status: Conflict, Invalid, ...).
	PrepareForStatusUpdate func(ctx context.Context, adm *Admission, obj, old T) error
	// RemoveWrites are the store writes that go with removing obj (as
	// stored) from the store, in the same transaction, and the conditions
	// they need: records kept outside the registry's objects that live and
	// die with it (e.g. an Event's system record). It runs on every attempt
	// of every removal (finalizers gone, a forced or background deletion);
	// it may read the store, and a condition that fails makes the removal
	// try again. An error fails the removal.
	RemoveWrites RemoveHook
}

// RemoveHook returns the store writes that go with removing obj from the
// store, and the conditions they need (Spec.RemoveWrites).
type RemoveHook func(ctx context.Context, obj *api.Object) ([]store.Cond, []store.Op, error)

// Define turns a typed Spec into a Kind.
func Define[T api.Resource](s Spec[T]) Kind {
	elem := reflect.TypeFor[T]().Elem()
	k := Kind{
		KindInfo: api.KindInfo{
			Kind: s.Kind, Plural: api.Plural(s.Kind), Namespaced: s.Namespaced,
			ShortNames: s.ShortNames, Columns: s.Columns, Categories: append([]string{"cairn"}, s.Categories...),
			Subresources: append([]string{"status", api.ActionTrace}, s.Subresources...),
			Sensitive:    s.Sensitive,
		},
		Encrypted: s.Encrypted,
		Actions:   s.Actions,
		GoType:    elem,
		authorize: s.Authorize,
		acts:      s.Acts != nil,

		removeWrites: s.RemoveWrites,
	}
	k.Fields, k.fieldsErr = declaredFields(s.Kind, s.Fields, elem)
	for _, a := range s.Actions {
		k.Subresources = append(k.Subresources, a.Name)
	}
	k.prepare = (&typed[T]{s: s, elem: elem}).prepare
	return k
}

// describeDecodeError turns a JSON decoding error into a message naming the
// field, without echoing values (which may be secret).
func describeDecodeError(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Sprintf("field %q: cannot use a JSON %s as %s", te.Field, te.Value, te.Type)
	}
	return err.Error()
}

// Action is a kind-specific endpoint: METHOD .../{plural}/{name}/{Name}, or
// with Collection, METHOD .../{plural}/{Name}. Call it through
// Registry.Act, which authorizes the caller first.
type Action struct {
	Name       string
	Method     string
	Collection bool
	// Authorize grants (or denies) callers other than admins this action,
	// whose verb is Verb(); it is consulted before the kind's rule.
	Authorize authz.Rule
	// Params are the query parameters the action reads. The HTTP server
	// refuses any other (but pretty and timeout) with BadRequest, so that
	// no parameter is silently ignored. When they include dryRun, the
	// server reads the write parameters (dryRun, fieldManager,
	// fieldValidation) into ActionRequest.Options.
	Params []string
	// Handle serves the call. The caller is in the context (identity.From).
	// Errors should be *api.Status; others become InternalError.
	Handle func(ctx context.Context, req ActionRequest) (ActionResult, error)
}

// Verb is the authorization verb of the action: its name, or for the
// unnamed collection action "deletecollection" for DELETE on a collection
// and "create" for POST (a create served by the kind).
func (a *Action) Verb() string {
	if a.Name == "" {
		if a.Method == "POST" {
			return authz.VerbCreate // a create with rules of its own
		}
		return strings.ToLower(a.Method) + "collection"
	}
	return a.Name
}

// ActionRequest is one call of an Action.
type ActionRequest struct {
	Namespace string
	// Name is empty for collection actions.
	Name  string
	Query url.Values
	Body  []byte
	// Options are the write parameters of the query, for an action that
	// declares them (Action.Params): a create with rules of its own honours
	// DryRun as Create does.
	Options api.WriteOptions
}

// ActionResult is the answer of an Action: an object sent as JSON with
// Code (200 when 0), or a Stream copied to the client as it is written
// (for logs). flush pushes what was written so far to the client.
type ActionResult struct {
	Code   int
	Object any
	Stream func(ctx context.Context, w io.Writer, flush func()) error
}

// newActs is what obj (of a write of op) acts for that old did not (see
// Spec.Acts): everything on create, what an update adds; nil for other
// writes and kinds that act for nobody.
func newActs[T any](acts func(T) []authz.Attributes, op Operation, obj, old T, hasOld bool) []authz.Attributes {
	if acts == nil || (op != OpCreate && op != OpUpdate) {
		return nil
	}
	var before []authz.Attributes
	if op == OpUpdate && hasOld {
		before = acts(old)
	}
	return actsOf(acts(obj), before)
}
