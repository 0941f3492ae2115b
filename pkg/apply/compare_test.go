package apply

import "testing"

func TestContains(t *testing.T) {
	tests := []struct {
		name       string
		live, want interface{}
		match      bool
	}{
		{"extra live fields are fine", map[string]interface{}{"a": "1", "b": "2"}, map[string]interface{}{"a": "1"}, true},
		{"a changed value is drift", map[string]interface{}{"a": "2"}, map[string]interface{}{"a": "1"}, false},
		{"a missing field is drift", map[string]interface{}{}, map[string]interface{}{"a": "1"}, false},
		{"an empty map the server drops matches", map[string]interface{}{}, map[string]interface{}{"a": map[string]interface{}{}}, true},
		{"numbers compare by value", map[string]interface{}{"n": int64(3)}, map[string]interface{}{"n": float64(3)}, true},
		{"quantities compare by value", map[string]interface{}{"cpu": "500m"}, map[string]interface{}{"cpu": "0.5"}, true},
		{"different quantities differ", map[string]interface{}{"cpu": "1"}, map[string]interface{}{"cpu": "0.5"}, false},
		{"list elements may carry defaults", []interface{}{map[string]interface{}{"name": "c", "imagePullPolicy": "Always"}}, []interface{}{map[string]interface{}{"name": "c"}}, true},
		{"list length must match", []interface{}{"a", "b"}, []interface{}{"a"}, false},
		{"a type change is drift", map[string]interface{}{"a": "1"}, map[string]interface{}{"a": int64(1)}, false},
		{"booleans compare exactly", map[string]interface{}{"b": true}, map[string]interface{}{"b": false}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := contains(tt.live, tt.want); got != tt.match {
				t.Errorf("contains = %v, want %v", got, tt.match)
			}
		})
	}
}

func TestSecretStringDataComparesAsData(t *testing.T) {
	want := secretStringData(map[string]interface{}{"stringData": map[string]interface{}{"k": "v"}})
	live := map[string]interface{}{"data": map[string]interface{}{"k": "dg=="}}
	if !contains(live, want) {
		t.Errorf("stringData must compare equal to its base64 data: %v", want)
	}
}
