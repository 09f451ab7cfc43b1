package events

import (
	"fmt"
	"reflect"

	"github.com/cockroachdb/apd/v3"
)

var decimalType = reflect.TypeFor[apd.Decimal]()

// mayHoldNonFinite reports whether a payload could hold a NaN or an infinite decimal: apd
// reads them only from texts that spell "nan" or "inf" (in any case), so a payload without
// either needs no walk through its decimals (the walk costs more than the decoding).
func mayHoldNonFinite(payload []byte) bool {
	for i := 0; i+3 <= len(payload); i++ {
		c := payload[i] | 0x20
		if c != 'n' && c != 'i' {
			continue
		}
		w := [3]byte{c, payload[i+1] | 0x20, payload[i+2] | 0x20}
		if w == [3]byte{'n', 'a', 'n'} || w == [3]byte{'i', 'n', 'f'} {
			return true
		}
	}
	return false
}

// checkFinite fails when any decimal of v (fields, pointers, slices, maps, nested structs)
// is NaN or infinite. JSON accepts "NaN" and "Infinity" for an apd.Decimal, but no price,
// volume or amount can be one, and the arithmetic of every consumer assumes finite values:
// such an event is undecodable (its consumers park it) rather than a number in a read model.
func checkFinite(v reflect.Value, path string) error {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return nil
		}
		return checkFinite(v.Elem(), path)
	case reflect.Struct:
		if v.Type() == decimalType {
			if d := v.Addr().Interface().(*apd.Decimal); d.Form != apd.Finite {
				return fmt.Errorf("events: %s is %s, not a finite decimal", path, d.String())
			}
			return nil
		}
		for i := range v.NumField() {
			if f := v.Type().Field(i); f.IsExported() {
				if err := checkFinite(v.Field(i), path+"."+f.Name); err != nil {
					return err
				}
			}
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			if err := checkFinite(v.Index(i), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			val := reflect.New(it.Value().Type()).Elem()
			val.Set(it.Value())
			if err := checkFinite(val, fmt.Sprintf("%s[%v]", path, it.Key())); err != nil {
				return err
			}
		}
	}
	return nil
}
