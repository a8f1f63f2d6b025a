package registry

// Creators: whom an object acts for.
//
// Some objects make cairn do things later, with nobody's request in
// sight: a Project's worker runs commands, a container deploy item runs
// one, an Installation's imports are read by its controller, a Cleaner
// deletes its targets. None of these may act with more authority than the
// principal who defined the object: nobody grants what they do not hold.
//
// So the registry records, on create, the object's creator in the
// annotation api.AnnotationCreator (clients cannot write it), and checks
// what the object acts for (its kind's Acts: e.g. run on DeployItem, get
// on the Secret it imports) against that creator, at admission. An object
// an admin creates under a controlling owner (a controller rendering an
// Installation's Execution, an Execution's DeployItems) inherits its
// owner's creator, so the whole chain is checked as the principal who
// wrote its root. When a controller acts later, it names the object it
// acts for (api.OnBehalfOf), and each of its requests is authorized as
// that object's creator too (admitFor): controllers never lend their own
// authority.

import (
	"context"
	"errors"
	"slices"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/authz"
	"cairn.dev/cairn/identity"
)

// Authority knows what worker principals (callers and creators with a
// Scope) may do. It is package event's Service; the registry handles
// admins and unscoped users itself.
type Authority interface {
	// Record returns the creator record of the scoped caller u (its name,
	// scope and project). It may block on store reads, bounded by ctx.
	// Errors: Forbidden when u's scope is not a live event's, and the
	// store's.
	Record(ctx context.Context, u identity.User) (api.Creator, error)
	// Permits decides whether the worker principal c may do a (whose
	// Namespace is set; its User is c's identity), by the workerPermissions
	// of c's project as they are now. It blocks on a store read, bounded
	// by ctx. It returns Allow or Deny with the reason; errors are the
	// store's.
	Permits(ctx context.Context, c api.Creator, a authz.Attributes) (authz.Decision, string, error)
}

// record returns the creator record of caller u.
func (r *Registry) record(ctx context.Context, u identity.User) (api.Creator, error) {
	switch {
	case u.Admin:
		return api.Creator{Name: u.Name, Admin: true}, nil
	case u.Scope == "":
		return api.Creator{Name: u.Name}, nil
	case r.opts.Authority == nil:
		return api.Creator{}, api.NewStatus(api.ReasonForbidden, "user %s: this server knows no worker principals", u.Name)
	}
	return r.opts.Authority.Record(ctx, u)
}

// creatorMay returns nil when creator c may do a, else a Forbidden
// *api.Status saying who may not do what, and why.
func (r *Registry) creatorMay(ctx context.Context, c api.Creator, a authz.Attributes) error {
	if c.Admin {
		return nil
	}
	a.User = identity.User{Name: c.Name, Scope: c.Scope}
	var d authz.Decision
	var why string
	switch {
	case c.Scope == "":
		d, why = r.authz.Decide(ctx, a)
	case r.opts.Authority == nil:
		d, why = authz.Deny, "this server knows no worker principals"
	default:
		var err error
		if d, why, err = r.opts.Authority.Permits(ctx, c, a); err != nil {
			return err
		}
	}
	if d == authz.Allow {
		return nil
	}
	return authz.Forbidden(a, why)
}

// checkActs checks what obj acts for (adm.acts) as its creator, and as the
// caller too when the caller is another principal who is not an admin:
// an update by a worker cannot borrow the creator's authority.
func (r *Registry) checkActs(ctx context.Context, adm *Admission, obj *api.Object, creator api.Creator) error {
	if len(adm.acts) == 0 {
		return nil
	}
	var caller *api.Creator
	if u := adm.User; !u.Admin && (u.Name != creator.Name || u.Scope != creator.Scope) {
		c, err := r.record(ctx, u)
		if err != nil {
			return err
		}
		caller = &c
	}
	for _, a := range adm.acts {
		a.Namespace = obj.Namespace
		if err := r.creatorMay(ctx, creator, a); err != nil {
			return actsErr(obj, creator, err)
		}
		if caller != nil {
			if err := r.creatorMay(ctx, *caller, a); err != nil {
				return err
			}
		}
	}
	return nil
}

// actsErr says that obj may not act so for its creator.
func actsErr(obj *api.Object, creator api.Creator, err error) error {
	var st *api.Status
	if !errors.As(err, &st) || st.Reason != api.ReasonForbidden {
		return err
	}
	return api.NewCreatorForbidden(obj.Kind, creator, st.Message)
}

// recordCreator records the creator of out, a create (old nil) or an
// update of the main resource of old, on kinds whose objects act for it,
// after checking what out newly acts for as that creator. It may block on
// reads of a controlling owner and of the principals' permissions.
// Errors: Forbidden (checkActs), the store's.
func (r *Registry) recordCreator(ctx context.Context, adm *Admission, k *Kind, out, old *api.Object, pend pending) error {
	if !k.acts {
		return nil
	}
	var creator api.Creator
	var err error
	if old == nil {
		creator, err = r.creatorForCreate(ctx, adm, r.controllerCreator(ctx, adm, k, out, pend))
	} else {
		creator, err = r.creatorForUpdate(ctx, adm, old)
	}
	if err != nil {
		return err
	}
	if err := r.checkActs(ctx, adm, out, creator); err != nil {
		return err
	}
	setCreator(out, creator)
	return nil
}

// creatorForCreate returns the creator of obj, created by adm.User: the
// controlling owner's (inherited) when an admin creates it under one that
// records a creator, else the caller's record.
func (r *Registry) creatorForCreate(ctx context.Context, adm *Admission, inherited string) (api.Creator, error) {
	if adm.User.Admin && inherited != "" {
		if c, err := api.ParseCreator(inherited); err == nil {
			return c, nil
		}
	}
	return r.record(ctx, adm.User)
}

// creatorForUpdate returns the creator recorded on the stored old, or,
// for an object stored before cairn recorded creators, the caller's.
func (r *Registry) creatorForUpdate(ctx context.Context, adm *Admission, old *api.Object) (api.Creator, error) {
	if c, ok := api.CreatorOf(&old.ObjectMeta); ok {
		return c, nil
	}
	return r.record(ctx, adm.User)
}

// setCreator records c on obj, replacing whatever the client sent.
func setCreator(obj *api.Object, c api.Creator) {
	if obj.Annotations == nil {
		obj.Annotations = map[string]string{}
	}
	obj.Annotations[api.AnnotationCreator] = c.Encode()
}

// admitFor authorizes a, already allowed for the caller, as the creator of
// the object ctx acts for (api.OnBehalfOf), when it names one. It blocks
// on a read of that object (and what Authority.Permits reads). Errors:
// Forbidden when that object is gone, another incarnation, in another
// namespace, records no creator, or its creator may not do a.
func (r *Registry) admitFor(ctx context.Context, a authz.Attributes) error {
	b, ok := api.OnBehalfOfFrom(ctx)
	if !ok {
		return nil
	}
	refuse := func(format string, args ...any) error {
		return api.NewStatus(api.ReasonForbidden, "acting for %s: "+format, append([]any{b}, args...)...)
	}
	k, err := r.Lookup(b.Kind)
	if err != nil {
		return refuse("no such kind")
	}
	if a.Namespace != "" && b.Namespace != a.Namespace {
		return refuse("a request in namespace %s acts for an object of its own namespace only", a.Namespace)
	}
	cur, err := r.read(ctx, k, b.Namespace, b.Name)
	if err != nil {
		if err = apiError(err, k.Kind, b.Name); api.ReasonOf(err) != api.ReasonNotFound {
			return err
		}
		return refuse("it does not exist")
	}
	if b.UID != "" && cur.obj.UID != b.UID {
		return refuse("it was deleted and created again (uid %s, not %s)", cur.obj.UID, b.UID)
	}
	c, ok := api.CreatorOf(&cur.obj.ObjectMeta)
	if !ok {
		return refuse("it records no creator (stored before cairn recorded creators): apply it again")
	}
	if a.Namespace == "" {
		a.Namespace = b.Namespace
	}
	if err := r.creatorMay(api.WithoutOnBehalfOf(ctx), c, a); err != nil {
		return actsErr(cur.obj, c, err)
	}
	return nil
}

// actsOf returns what a new version of an object acts for that its old
// version (nil on create) did not: only new effects are checked, so that
// an object whose creator lost a right can still be updated (a finalizer
// removed, a status written) and deleted.
func actsOf(now, before []authz.Attributes) []authz.Attributes {
	if len(before) == 0 {
		return now
	}
	var out []authz.Attributes
	for _, a := range now {
		if !slices.Contains(before, a) {
			out = append(out, a)
		}
	}
	return out
}

// controllerCreator returns the creator annotation of obj's controlling
// owner when an admin (a controller) creates obj under one that is stored
// (not created in the same transaction), else "". It reads the owner
// through the watch cache when it holds it.
func (r *Registry) controllerCreator(ctx context.Context, adm *Admission, k *Kind, obj *api.Object, pend pending) string {
	if !adm.User.Admin {
		return ""
	}
	for _, o := range obj.OwnerReferences {
		if !o.Controller {
			continue
		}
		ok, err := r.Lookup(o.Kind)
		if err != nil || ok.Namespaced != k.Namespaced {
			return ""
		}
		key := r.key(ok, obj.Namespace, o.Name)
		if pend.has(key) {
			return ""
		}
		cur, err := r.readGuard(ctx, ok, obj.Namespace, o.Name, func(s *stored) bool { return s.obj.UID == o.UID })
		if err != nil || cur.obj.UID != o.UID {
			return "" // checkOwners refuses a missing owner
		}
		return cur.obj.Annotations[api.AnnotationCreator]
	}
	return ""
}
