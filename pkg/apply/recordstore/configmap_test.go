package recordstore

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubefake "k8s.io/client-go/kubernetes/fake"

	"github.com/payload-applier/payload-applier/pkg/apply/recordstore/recordstoretest"
)

// item is the record of these tests.
type item struct {
	Name  string `json:"name"`
	Value string `json:"value,omitempty"`
	// Sticky items win a merge against this writer's.
	Sticky bool     `json:"sticky,omitempty"`
	Tags   []string `json:"tags,omitempty"`
}

var items = Format[item]{
	What:       "test items",
	Key:        func(i item) string { return i.Name },
	DataKey:    "records.json",
	GzipKey:    "records.json.gz",
	LegacyKey:  "items.json",
	MaxRecords: 1000,
	MaxItems:   4096,
	MaxBytes:   1 << 20,
}

func named(names ...string) []item {
	out := make([]item, len(names))
	for i, n := range names {
		out[i] = item{Name: n, Value: "v"}
	}
	return out
}

func configMap(data map[string]string, binary map[string][]byte) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "items", Namespace: "ns"}, Data: data, BinaryData: binary}
}

// TestEncodingIsPlainUpToTheLimitThenGzip: the records stay readable with
// kubectl up to exactly plainMax bytes, gzipped one byte beyond, and read
// back the same either way, in key order.
func TestEncodingIsPlainUpToTheLimitThenGzip(t *testing.T) {
	recs := make([]item, 200)
	for i := range recs {
		recs[i] = item{Name: fmt.Sprintf("item-%03d", len(recs)-i), Value: strings.Repeat("x", 1000)}
	}
	data, _, err := items.encode(recs)
	if err != nil {
		t.Fatal(err)
	}
	last := &recs[len(recs)-1]
	last.Value += strings.Repeat("y", plainMax-len(data[items.DataKey]))
	for extra, wantKey := range map[int]string{0: items.DataKey, 1: items.GzipKey} {
		recs := append([]item(nil), recs...)
		recs[len(recs)-1].Value += strings.Repeat("z", extra)
		data, binary, err := items.encode(recs)
		if err != nil {
			t.Fatal(err)
		}
		if len(data)+len(binary) != 1 || (data[wantKey] == "" && binary[wantKey] == nil) {
			t.Fatalf("%d bytes past the limit: stored under %v %v, want only %s", extra, keys(data), len(binary), wantKey)
		}
		if plain := data[items.DataKey]; plain != "" && (len(plain) != plainMax || !strings.HasPrefix(plain, "[\n{\"name\":\"item-001\"")) {
			t.Errorf("plain records take %d bytes, want %d, one a line in key order: %.40q", len(plain), plainMax, plain)
		}
		got, key, err := items.decode(configMap(data, binary))
		if err != nil || key != wantKey {
			t.Fatalf("decode read %s: %v", key, err)
		}
		want := append([]item(nil), recs...)
		reverse(want)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%d bytes past the limit: %d records back of %d, or changed", extra, len(got), len(want))
		}
	}
}

func reverse(s []item) {
	for i, j := 0, len(s)-1; i < j; i, j = i+1, j-1 {
		s[i], s[j] = s[j], s[i]
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestEncodingRefusesWhatItCouldNotReadBack(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	noise := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte('a' + rnd.IntN(26))
		}
		return string(b)
	}
	big := items
	big.MaxBytes = 64 << 20
	var incompressible []item
	for i := range 300 {
		incompressible = append(incompressible, item{Name: fmt.Sprint(i), Value: noise(8192)})
	}
	for name, tc := range map[string]struct {
		f    Format[item]
		recs []item
		want string
	}{
		"too many records":            {items, make([]item, items.MaxRecords+1), "test items holds 1001 records, more than the 1000 it may"},
		"too many bytes":              {items, []item{{Name: "a", Value: strings.Repeat("x", 1<<20)}}, "more than the 1 MiB it may"},
		"too many items":              {items, []item{{Name: "a", Tags: make([]string, 4094)}}, "1 records with 4097 list elements and object members, more than the 4096 it may"},
		"as many items as it may":     {items, []item{{Name: "a", Tags: make([]string, 4093)}}, ""},
		"more than a ConfigMap holds": {big, incompressible, "more than a ConfigMap can hold"},
		"what a ConfigMap holds":      {big, incompressible[:100], ""},
	} {
		t.Run(name, func(t *testing.T) {
			_, _, err := tc.f.encode(tc.recs)
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestLoadSaysWhyItCannotRead(t *testing.T) {
	tooMany := "[" + strings.Repeat(`{"name":"x"},`, items.MaxRecords) + `{"name":"x"}]`
	tooLarge := `[{"name":"` + strings.Repeat("x", items.MaxBytes) + `"}]`
	truncated := recordstoretest.Gzip(t, `[{"name":"a"}]`, "", 0, "")
	truncated = truncated[:len(truncated)-6]
	for name, tc := range map[string]struct {
		cm      *corev1.ConfigMap
		key     string
		want    string
		wantNil bool
	}{
		"garbage":           {configMap(map[string]string{"records.json": "{not json"}, nil), "records.json", "not a list of records", false},
		"a wrong shape":     {configMap(map[string]string{"records.json": `{"name": "a"}`}, nil), "records.json", "not a list of records", false},
		"a wrong element":   {configMap(map[string]string{"records.json": `[{"name": "a"}, 1]`}, nil), "records.json", "record 2", false},
		"data after it":     {configMap(map[string]string{"records.json": `[] []`}, nil), "records.json", "data after the list", false},
		"cut short":         {configMap(map[string]string{"records.json": `[{"name": "a"}`}, nil), "records.json", "not a list of records", false},
		"not gzip":          {configMap(nil, map[string][]byte{"records.json.gz": []byte("plain")}), "records.json.gz", "not gzip data", false},
		"corrupt gzip":      {configMap(nil, map[string][]byte{"records.json.gz": truncated}), "records.json.gz", "corrupt gzip data", false},
		"too many records":  {configMap(map[string]string{"records.json": tooMany}, nil), "records.json", "more than 1000 records", false},
		"too large":         {configMap(map[string]string{"records.json": tooLarge}, nil), "records.json", "the records take more than 1 MiB", false},
		"too large gzipped": {configMap(nil, map[string][]byte{"records.json.gz": recordstoretest.Gzip(t, tooLarge, "", 0, "")}), "records.json.gz", "decompress to more than 1 MiB", false},
		"a bad legacy key":  {configMap(map[string]string{"items.json": "{"}, nil), "items.json", "not a list of records", false},
		"blank":             {configMap(map[string]string{"records.json": " \n"}, nil), "", "", true},
		"null":              {configMap(map[string]string{"records.json": "null"}, nil), "", "", true},
		"no key":            {configMap(map[string]string{"other": "x"}, nil), "", "", true},
	} {
		t.Run(name, func(t *testing.T) {
			store := NewConfigMapStore(kubefake.NewClientset(tc.cm), "ns", "items", items)
			recs, err := store.Load(context.Background())
			if tc.wantNil {
				if err != nil || recs != nil {
					t.Errorf("got %v, %v; want no records", recs, err)
				}
				return
			}
			var unreadable *UnreadableError
			if !errors.As(err, &unreadable) || unreadable.Key != tc.key || unreadable.What != "test items" || !strings.Contains(err.Error(), tc.want) ||
				!strings.Contains(err.Error(), "test items in configmap ns/items, key "+tc.key+": ") {
				t.Errorf("got %v, want an UnreadableError naming the ConfigMap, key %s and %q", err, tc.key, tc.want)
			}
		})
	}
}

// TestAHostileGzipIsRefusedCheaply: 16 KiB of gzip that inflate to
// millions of empty records, or to a record of millions of empty strings,
// are refused once past the limits, without allocating the rest.
func TestAHostileGzipIsRefusedCheaply(t *testing.T) {
	const n = 5_600_000
	for name, tc := range map[string]struct {
		bomb []byte
		want string
	}{
		"empty records":             {recordstoretest.EmptyRecordsGzip(t, n), "more than 1000 records"},
		"a record of empty strings": {recordstoretest.Gzip(t, `[{"name":"a","tags":[`, `"",`, n-1, `""]}]`), "more than 4096 list elements and object members"},
	} {
		t.Run(name, func(t *testing.T) {
			// The records fit the bytes limit: only their count stops them.
			f := items
			f.MaxBytes = 64 << 20
			store := NewConfigMapStore(kubefake.NewClientset(configMap(nil, map[string][]byte{"records.json.gz": tc.bomb})), "ns", "items", f)
			var err error
			allocated := recordstoretest.AllocatedBytes(func() { _, err = store.Load(context.Background()) })
			t.Logf("%d bytes of gzip holding %d items: read after allocating %d KiB", len(tc.bomb), n, allocated>>10)
			if allocated > 50<<20 {
				t.Errorf("reading the records allocated %d MiB", allocated>>20)
			}
			var unreadable *UnreadableError
			if !errors.As(err, &unreadable) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want %q", err, tc.want)
			}
		})
	}
}

func TestItemCounterCountsOutsideStringsAcrossReads(t *testing.T) {
	text := `[{"name":"a,[{","tags":["\"]",",{"]},{"name":"\\"},[],{}]`
	var whole itemCounter
	// The list's 4 elements, 3 members, 2 tags, and one each for the
	// empty list and object; none of the brackets and commas in strings.
	if got := whole.count([]byte(text)); got != 11 {
		t.Errorf("counted %d items, want 11", got)
	}
	for cut := range len(text) {
		var c itemCounter
		if got := c.count([]byte(text[:cut])) + c.count([]byte(text[cut:])); got != 11 {
			t.Errorf("read in two at %d: %d items, want 11", cut, got)
		}
	}
}

func TestBoundedReaderFillsEachRead(t *testing.T) {
	r := &boundedReader{r: iotest.OneByteReader(strings.NewReader("[1, 2]")), bytesLeft: 100, itemsLeft: 100}
	p := make([]byte, 4)
	if n, err := r.Read(p); n != 4 || err != nil {
		t.Errorf("read %d bytes (%v), want 4: a short read makes json.Decoder scan again", n, err)
	}
}

func TestALegacyKeyIsReadThenReplaced(t *testing.T) {
	ctx := context.Background()
	kube := kubefake.NewClientset(configMap(map[string]string{"items.json": `[{"name":"old","value":"v"}]`}, nil))
	store := NewConfigMapStore(kube, "ns", "items", items)
	recs, err := store.Load(ctx)
	if err != nil || !reflect.DeepEqual(recs, named("old")) {
		t.Fatalf("got %v, %v; want the legacy record", recs, err)
	}
	if err := store.Save(ctx, named("new", "old")); err != nil {
		t.Fatal(err)
	}
	cm, err := kube.CoreV1().ConfigMaps("ns").Get(ctx, "items", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := cm.Data["items.json"]; ok || !strings.Contains(cm.Data["records.json"], "new") {
		t.Errorf("a save must write the current key only: %v", cm.Data)
	}

	// The current key wins over a legacy one left beside it.
	both := configMap(map[string]string{"items.json": `[{"name":"old"}]`, "records.json": `[{"name":"new","value":"v"}]`}, nil)
	recs, err = NewConfigMapStore(kubefake.NewClientset(both), "ns", "items", items).Load(ctx)
	if err != nil || !reflect.DeepEqual(recs, named("new")) {
		t.Errorf("got %v, %v; want the current key's record", recs, err)
	}
}

func TestMerge(t *testing.T) {
	sticky := items
	sticky.PreferStored = func(ours, stored item) bool { return stored.Sticky && !ours.Sticky }
	base := map[string]item{
		"pruned":         {Name: "pruned", Value: "v"},
		"pruned-changed": {Name: "pruned-changed", Value: "v"},
		"both":           {Name: "both", Value: "v"},
	}
	ours := []item{{Name: "mine", Value: "ours"}, {Name: "both", Value: "ours"}, {Name: "sticky", Value: "ours"}}
	stored := []item{
		{Name: "theirs", Value: "theirs"}, {Name: "both", Value: "theirs"}, {Name: "sticky", Value: "theirs", Sticky: true},
		{Name: "pruned", Value: "v"}, {Name: "pruned-changed", Value: "theirs"},
	}
	for name, tc := range map[string]struct {
		f           Format[item]
		want        string
		wantForeign string
	}{
		"ours win":                        {items, "mine=ours both=ours sticky=ours theirs=theirs pruned-changed=theirs", "theirs=theirs pruned-changed=theirs"},
		"unless the stored one is sticky": {sticky, "mine=ours both=ours sticky=theirs theirs=theirs pruned-changed=theirs", "theirs=theirs sticky=theirs pruned-changed=theirs"},
	} {
		t.Run(name, func(t *testing.T) {
			merged, foreign := merge(ours, stored, base, tc.f)
			if got := show(merged); got != tc.want {
				t.Errorf("merged %s, want %s", got, tc.want)
			}
			if got := show(foreign); got != tc.wantForeign {
				t.Errorf("foreign %s, want %s", got, tc.wantForeign)
			}
		})
	}
}

func show(recs []item) string {
	var out []string
	for _, r := range recs {
		out = append(out, r.Name+"="+r.Value)
	}
	return strings.Join(out, " ")
}

// TestASaveThatConflictsMerges: another writer saved since this one
// loaded; the save conflicts, reads again and merges, three-way, and the
// ledger learns the other writer's records.
func TestASaveThatConflictsMerges(t *testing.T) {
	ctx := context.Background()
	kube := kubefake.NewClientset()
	mine := NewLedger(NewConfigMapStore(kube, "ns", "items", items), items)
	if err := mine.PutAll(ctx, named("a", "b", "pruned", "changed")); err != nil {
		t.Fatal(err)
	}
	other := NewConfigMapStore(kube, "ns", "items", items)
	if _, err := other.Load(ctx); err != nil {
		t.Fatal(err)
	}
	if err := other.Save(ctx, []item{{Name: "a", Value: "theirs"}, {Name: "b", Value: "v"}, {Name: "pruned", Value: "v"}, {Name: "changed", Value: "theirs"}, {Name: "new", Value: "theirs"}}); err != nil {
		t.Fatal(err)
	}

	mine.Set(item{Name: "a", Value: "ours"})
	mine.Prune(func(i item) bool { return i.Name == "pruned" || i.Name == "changed" })
	recordstoretest.ConflictNextUpdates(kube, 1)
	kube.ClearActions()
	if err := mine.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if verbs := recordstoretest.Verbs(kube.Actions()); !reflect.DeepEqual(verbs, []string{"update", "get", "update"}) {
		t.Errorf("a save that conflicts sent %v, want update, get, update", verbs)
	}
	stored, err := NewConfigMapStore(kube, "ns", "items", items).Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := show(stored), "a=ours b=v changed=theirs new=theirs"; got != want {
		t.Errorf("stored %s, want %s: this writer's change, the other's new and changed records, not what this writer pruned", got, want)
	}
	if got, want := show(mine.All()), show(stored); got != want {
		t.Errorf("the ledger holds %s, want what was stored, %s", got, want)
	}
}

func TestASaveGivesUpAfterRepeatedConflicts(t *testing.T) {
	ctx := context.Background()
	kube := kubefake.NewClientset()
	store := NewConfigMapStore(kube, "ns", "items", items)
	if err := store.Save(ctx, named("a")); err != nil {
		t.Fatal(err)
	}
	recordstoretest.ConflictNextUpdates(kube, maxSaveAttempts)
	kube.ClearActions()
	if err := store.Save(ctx, named("b")); err == nil || !strings.Contains(err.Error(), "stale") {
		t.Fatalf("err = %v, want the conflict", err)
	}
	if n := len(kube.Actions()); n != 2*maxSaveAttempts-1 {
		t.Errorf("%d requests, want %d updates with a read between each", n, maxSaveAttempts)
	}
	// The next save reads again rather than trust a stale cache.
	kube.ClearActions()
	if err := store.Save(ctx, named("b")); err != nil {
		t.Fatal(err)
	}
	if verbs := recordstoretest.Verbs(kube.Actions()); !reflect.DeepEqual(verbs, []string{"get", "update"}) {
		t.Errorf("a save after a failed one sent %v, want get, update", verbs)
	}
}

func TestUnreadableErrorNamesWhatItCouldNotRead(t *testing.T) {
	err := error(&UnreadableError{Namespace: "ns", Name: "cm", Key: "k", Err: errors.New("broken")})
	if got := err.Error(); got != "configmap ns/cm, key k: broken" {
		t.Errorf("without What: %q", got)
	}
	err = &UnreadableError{Namespace: "ns", Name: "cm", Key: "k", What: "delete ledger", Err: errors.New("broken")}
	if got := err.Error(); got != "delete ledger in configmap ns/cm, key k: broken" {
		t.Errorf("with What: %q", got)
	}
}
