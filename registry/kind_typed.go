package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"cairn.dev/cairn/api"
)

// typed is a kind's Spec with its Go type: what Kind.prepare runs, in
// steps (decode, hook, validate).
type typed[T api.Resource] struct {
	s    Spec[T]
	elem reflect.Type // T's element type
}

// newT returns a new, zero T.
func (d *typed[T]) newT() T { return reflect.New(d.elem).Interface().(T) }

// decode decodes o into a new T, refusing unknown fields. With strict, a
// field given twice or in the wrong case is refused too (strictDecode, an
// *api.Status); else a stored object is read as it is. Errors: a JSON
// error (a type error names the field).
func (d *typed[T]) decode(o *api.Object, strict bool) (T, error) {
	t := d.newT()
	// MarshalJSON itself: json.Marshal would scan its output again
	// to check and compact it, and the decoder does not need that.
	raw, err := o.MarshalJSON()
	if err != nil {
		return t, err
	}
	if strict {
		// One strict decoding gives the object, unless a type error
		// stopped it: the decoding below then names the field.
		done, err := strictDecode(d.s.Kind, o.Name, raw, t)
		if done || err != nil {
			return t, err
		}
		t = d.newT()
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(t); err != nil {
		return t, err
	}
	return t, nil
}

// prepare decodes obj strictly into T, applies the hook of adm.Op,
// defaults and validates it, and returns the normalized generic object
// (Kind.prepare). old is nil on create. It returns field errors for an
// invalid object; BadRequest when obj does not decode; an internal error
// when the stored old does not; a hook's error as it is.
func (d *typed[T]) prepare(ctx context.Context, adm *Admission, obj, old *api.Object) (*api.Object, field.ErrorList, error) {
	s, op := &d.s, adm.Op
	if s.Precheck != nil && op != OpUpdateStatus {
		if errs := s.Precheck(obj); len(errs) > 0 {
			return nil, errs, nil
		}
	}
	// A delete's object is the stored one: only writes are checked.
	t, err := d.decode(obj, op != OpDelete)
	if st, ok := errors.AsType[*api.Status](err); ok {
		return nil, nil, st
	}
	if err != nil {
		return nil, nil, api.NewBadRequest("%s %q: %s", s.Kind, obj.Name, describeDecodeError(err))
	}
	o, err := d.decodeOld(op, old)
	if err != nil {
		return nil, nil, err
	}
	if err := d.hook(ctx, adm, op, t, o, old != nil); err != nil {
		return nil, nil, err
	}
	if s.Default != nil {
		s.Default(t)
	}
	if errs := d.validate(ctx, adm, op, t, o); len(errs) > 0 {
		return nil, errs, nil
	}
	adm.acts = newActs(s.Acts, op, t, o, old != nil)
	out, err := api.FromResource(t)
	if err != nil {
		return nil, nil, fmt.Errorf("registry: encode %s: %w", s.Kind, err)
	}
	return out, nil, nil
}

// decodeOld decodes the stored old for the hooks of op that read it, and
// returns the zero T when none does (or old is nil). Errors: old does not
// decode (an internal error).
func (d *typed[T]) decodeOld(op Operation, old *api.Object) (T, error) {
	s := &d.s
	var o T
	if old != nil && (op == OpUpdate && (s.PrepareForUpdate != nil || s.ValidateUpdate != nil || s.Acts != nil) ||
		op == OpUpdateStatus && s.PrepareForStatusUpdate != nil) {
		var err error
		if o, err = d.decode(old, false); err != nil {
			return o, fmt.Errorf("registry: stored %s %q does not decode: %w", s.Kind, old.Name, err)
		}
	}
	return o, nil
}

// hook runs the Spec's PrepareFor hook of op (adm.Op) on t (o is the
// decoded stored object; hasOld: there is one) and returns its error as it
// is.
func (d *typed[T]) hook(ctx context.Context, adm *Admission, op Operation, t, o T, hasOld bool) error {
	s := &d.s
	switch {
	case op == OpCreate && s.PrepareForCreate != nil:
		return s.PrepareForCreate(ctx, adm, t)
	case op == OpUpdate && s.PrepareForUpdate != nil:
		return s.PrepareForUpdate(ctx, adm, t, o)
	case op == OpDelete && s.PrepareForDelete != nil:
		return s.PrepareForDelete(ctx, adm, t)
	case op == OpUpdateStatus && hasOld && s.PrepareForStatusUpdate != nil:
		return s.PrepareForStatusUpdate(ctx, adm, t, o)
	}
	return nil
}

// validate runs the Spec's validations of op (adm.Op) on t (o is the
// decoded stored object) and returns their field errors.
func (d *typed[T]) validate(ctx context.Context, adm *Admission, op Operation, t, o T) field.ErrorList {
	s := &d.s
	var errs field.ErrorList
	switch op {
	case OpUpdateStatus:
		if s.ValidateStatus != nil {
			errs = append(errs, s.ValidateStatus(ctx, adm, t)...)
		}
	case OpCreate, OpUpdate:
		if s.Validate != nil {
			errs = append(errs, s.Validate(ctx, adm, t)...)
		}
		if op == OpUpdate && s.ValidateUpdate != nil {
			errs = append(errs, s.ValidateUpdate(ctx, adm, t, o)...)
		}
	}
	return errs
}
