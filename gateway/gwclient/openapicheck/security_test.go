package openapicheck_test

import (
	"sort"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"tradesvc/gateway/gwclient"
)

// hasParam reports whether op takes the named parameter, in the query or in a form body.
func hasParam(op *openapi3.Operation, name string) bool {
	for _, p := range op.Parameters {
		if p.Value != nil && p.Value.Name == name {
			return true
		}
	}
	if op.RequestBody != nil && op.RequestBody.Value != nil {
		for _, mt := range op.RequestBody.Value.Content {
			if mt.Schema != nil && mt.Schema.Value != nil && mt.Schema.Value.Properties[name] != nil {
				return true
			}
		}
	}
	return false
}

// keyRequired reports whether every security requirement of op names the API key.
func keyRequired(op *openapi3.Operation) bool {
	if op.Security == nil || len(*op.Security) == 0 {
		return false
	}
	for _, req := range *op.Security {
		if _, ok := req["apiKey"]; !ok {
			return false
		}
	}
	return true
}

// The table `tradesvc call` signs by (gwclient.EndpointSecurity) is the document's: every live
// operation with its x-security-type, its key requirement and its signing parameters.
func TestSecurityTableMatchesTheDocument(t *testing.T) {
	v := repo(t)
	table := gwclient.Endpoints()
	seen := map[string]bool{}
	for path, item := range v.Doc().Paths.Map() {
		for method, op := range item.Operations() {
			if op.Deprecated {
				continue // retired: answered -1016 whatever is sent
			}
			key := method + " " + path
			seen[key] = true
			want, _ := op.Extensions["x-security-type"].(string)
			got, ok := table[key]
			if !ok {
				t.Errorf("%s: in the document (%s) but not in gwclient's security table", key, want)
				continue
			}
			if string(got) != want {
				t.Errorf("%s: gwclient says %s, the document's x-security-type %q", key, got, want)
			}
			if s := hasParam(op, "signature") && hasParam(op, "timestamp"); s != got.Signed() {
				t.Errorf("%s: takes timestamp and signature %v, but %s signed is %v", key, s, got, got.Signed())
			}
			if k := keyRequired(op); k != got.Keyed() {
				t.Errorf("%s: the document requires the key %v, but %s keyed is %v", key, k, got, got.Keyed())
			}
		}
	}
	var extra []string
	for key := range table {
		if !seen[key] {
			extra = append(extra, key)
		}
	}
	sort.Strings(extra)
	for _, key := range extra {
		t.Errorf("%s: in gwclient's security table but not in the document", key)
	}
}
