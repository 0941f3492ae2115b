package recordstore

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sort"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

const (
	// managedBy labels the ConfigMap as the applier's, whose field manager
	// has the same name.
	managedBy = "payload-applier"
	// plainMax is the most the records take as plain JSON, which kubectl
	// shows as is; beyond it they are gzipped.
	plainMax = 256 << 10
	// configMapMax is what a ConfigMap holds, less room for its metadata.
	configMapMax = 1<<20 - 4096
	// maxSaveAttempts bounds the saves that meet another writer's.
	maxSaveAttempts = 4
)

// ConfigMapStore keeps records in one ConfigMap, so that they survive
// restarts of the applier.
type ConfigMapStore[R any] struct {
	client          kubernetes.Interface
	namespace, name string
	format          Format[R]

	mu sync.Mutex
	// cached is the ConfigMap as last read or written, so that a save is
	// one PUT rather than a GET and a PUT.
	cached *corev1.ConfigMap
	// foreign are records another writer stored that a merge kept.
	foreign []R
	// base is the records as this writer last read or wrote them, by key:
	// a merge tells from it what this writer pruned and what the other
	// writer changed.
	base map[string]R
}

// NewConfigMapStore returns a store of records in format f, in the
// ConfigMap namespace/name.
func NewConfigMapStore[R any](client kubernetes.Interface, namespace, name string, f Format[R]) *ConfigMapStore[R] {
	return &ConfigMapStore[R]{client: client, namespace: namespace, name: name, format: f}
}

// Load implements Store. A missing ConfigMap holds no records; one whose
// data does not decode is an *UnreadableError.
func (c *ConfigMapStore[R]) Load(ctx context.Context) ([]R, error) {
	cm, err := c.client.CoreV1().ConfigMaps(c.namespace).Get(ctx, c.name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	c.remember(cm)
	recs, err := c.decode(cm)
	if err != nil {
		return nil, err
	}
	c.setBase(recs)
	return recs, nil
}

func (c *ConfigMapStore[R]) remember(cm *corev1.ConfigMap) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cached = cm
}

// Save implements Store. When another writer saved since this one last
// read (an apply beside a running operator), it merges rather than
// overwrites (see merge). Foreign hands the records it kept to the
// ledger, so that its next save keeps them too.
func (c *ConfigMapStore[R]) Save(ctx context.Context, recs []R) error {
	cms := c.client.CoreV1().ConfigMaps(c.namespace)
	c.mu.Lock()
	cm := c.cached
	c.mu.Unlock()
	merged := recs
	for attempt := 1; ; attempt++ {
		if cm == nil {
			var err error
			cm, err = cms.Get(ctx, c.name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return c.create(ctx, merged)
			}
			if err != nil {
				return err
			}
			if attempt > 1 {
				stored, err := c.decode(cm)
				if err != nil {
					return err
				}
				c.mu.Lock()
				var foreign []R
				merged, foreign = merge(recs, stored, c.base, c.format)
				c.foreign = append(c.foreign, foreign...)
				c.mu.Unlock()
			}
		}
		data, binary, err := c.format.encode(merged)
		if err != nil {
			return fmt.Errorf("configmap %s/%s: %w", c.namespace, c.name, err)
		}
		cm = cm.DeepCopy()
		cm.Data, cm.BinaryData = data, binary
		updated, err := cms.Update(ctx, cm, metav1.UpdateOptions{})
		if err == nil {
			c.remember(updated)
			c.setBase(merged)
			return nil
		}
		// Someone else wrote it (or removed it) since this writer last
		// looked: read the latest version and merge.
		if attempt < maxSaveAttempts && (apierrors.IsConflict(err) || apierrors.IsNotFound(err)) {
			cm = nil
			continue
		}
		c.remember(nil)
		return err
	}
}

// create writes the ConfigMap for the first time.
func (c *ConfigMapStore[R]) create(ctx context.Context, recs []R) error {
	data, binary, err := c.format.encode(recs)
	if err != nil {
		return fmt.Errorf("configmap %s/%s: %w", c.namespace, c.name, err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Name:      c.name,
		Namespace: c.namespace,
		Labels:    map[string]string{"app.kubernetes.io/managed-by": managedBy},
	}}
	cm.Data, cm.BinaryData = data, binary
	created, err := c.client.CoreV1().ConfigMaps(c.namespace).Create(ctx, cm, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	c.remember(created)
	c.setBase(recs)
	return nil
}

func (c *ConfigMapStore[R]) setBase(recs []R) {
	base := make(map[string]R, len(recs))
	for _, r := range recs {
		base[c.format.Key(r)] = r
	}
	c.mu.Lock()
	c.base = base
	c.mu.Unlock()
}

// Foreign returns, once, the records another writer stored that a merge
// kept: a Ledger adds them to memory.
func (c *ConfigMapStore[R]) Foreign() []R {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.foreign
	c.foreign = nil
	return out
}

// decode reads cm's records, or says why it cannot as an *UnreadableError.
func (c *ConfigMapStore[R]) decode(cm *corev1.ConfigMap) ([]R, error) {
	recs, key, err := c.format.decode(cm)
	if err != nil {
		return nil, &UnreadableError{Namespace: c.namespace, Name: c.name, Key: key, What: c.format.What, Err: err}
	}
	return recs, nil
}

// merge merges this writer's records with the stored ones, against base,
// what this writer last read or wrote. For a key both have, this writer's
// record wins, as it acted on it last, unless f.PreferStored says the
// stored one does. A stored record this writer has none of is kept unless
// this writer pruned it (base holds it unchanged). foreign lists what
// this writer learns. encode sorts what it saves.
func merge[R any](ours, stored []R, base map[string]R, f Format[R]) (merged, foreign []R) {
	mine := make(map[string]int, len(ours))
	merged = append([]R(nil), ours...)
	for i, r := range merged {
		mine[f.Key(r)] = i
	}
	for _, theirs := range stored {
		k := f.Key(theirs)
		i, have := mine[k]
		switch {
		case have:
			if f.PreferStored != nil && f.PreferStored(merged[i], theirs) {
				merged[i] = theirs
				foreign = append(foreign, theirs)
			}
		case isBase(base, k, theirs):
			// Pruned by this writer since it last looked.
		default:
			merged = append(merged, theirs)
			foreign = append(foreign, theirs)
		}
	}
	return merged, foreign
}

func isBase[R any](base map[string]R, key string, r R) bool {
	b, ok := base[key]
	return ok && reflect.DeepEqual(b, r)
}

// encode renders records as a ConfigMap's data, sorted by key, one record
// a line: plain JSON while it is small enough to read with kubectl,
// gzipped beyond that. It refuses what a read would refuse and what a
// ConfigMap cannot hold.
func (f Format[R]) encode(recs []R) (map[string]string, map[string][]byte, error) {
	if len(recs) > f.MaxRecords {
		return nil, nil, fmt.Errorf("the %s holds %d records, more than the %d it may", f.What, len(recs), f.MaxRecords)
	}
	type line struct {
		key  string
		json []byte
	}
	lines := make([]line, len(recs))
	for i, r := range recs {
		b, err := json.Marshal(r)
		if err != nil {
			return nil, nil, err
		}
		lines[i] = line{f.Key(r), b}
	}
	sort.SliceStable(lines, func(i, j int) bool { return lines[i].key < lines[j].key })
	var buf bytes.Buffer
	buf.WriteString("[")
	for i, l := range lines {
		if i > 0 {
			buf.WriteString(",")
		}
		buf.WriteString("\n")
		buf.Write(l.json)
	}
	buf.WriteString("\n]\n")
	if buf.Len() > f.MaxBytes {
		return nil, nil, fmt.Errorf("the %s holds %d records in %d bytes, more than the %s it may", f.What, len(recs), buf.Len(), size(f.MaxBytes))
	}
	if items := new(itemCounter).count(buf.Bytes()); items > f.MaxItems {
		return nil, nil, fmt.Errorf("the %s holds %d records with %d list elements and object members, more than the %d it may", f.What, len(recs), items, f.MaxItems)
	}
	if buf.Len() <= plainMax {
		return map[string]string{f.DataKey: buf.String()}, nil, nil
	}
	var zbuf bytes.Buffer
	zw := gzip.NewWriter(&zbuf)
	if _, err := zw.Write(buf.Bytes()); err != nil {
		return nil, nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, nil, err
	}
	if zbuf.Len() > configMapMax {
		return nil, nil, fmt.Errorf("the %s holds %d records, %d bytes compressed, more than a ConfigMap can hold", f.What, len(recs), zbuf.Len())
	}
	return nil, map[string][]byte{f.GzipKey: zbuf.Bytes()}, nil
}

// decode reads the records back from whichever key holds them, gzip
// first, then plain, then legacy, through the format's limits; key names
// the key it read.
func (f Format[R]) decode(cm *corev1.ConfigMap) (recs []R, key string, err error) {
	var data io.Reader
	if z, ok := cm.BinaryData[f.GzipKey]; ok {
		key = f.GzipKey
		zr, err := gzip.NewReader(bytes.NewReader(z))
		if err != nil {
			return nil, key, fmt.Errorf("not gzip data: %w", err)
		}
		data = zr
	} else {
		key = f.DataKey
		if _, ok := cm.Data[key]; !ok && f.LegacyKey != "" {
			if _, ok := cm.Data[f.LegacyKey]; ok {
				key = f.LegacyKey
			}
		}
		data = strings.NewReader(cm.Data[key])
	}
	recs, err = decodeList[R](&boundedReader{r: data, bytesLeft: f.MaxBytes, itemsLeft: f.MaxItems}, f.MaxRecords)
	var readErr *readError
	switch {
	case errors.Is(err, errTooLarge) && key == f.GzipKey:
		return nil, key, fmt.Errorf("the records decompress to more than %s", size(f.MaxBytes))
	case errors.Is(err, errTooLarge):
		return nil, key, fmt.Errorf("the records take more than %s", size(f.MaxBytes))
	case errors.Is(err, errTooManyItems):
		return nil, key, fmt.Errorf("the records hold more than %d list elements and object members", f.MaxItems)
	case errors.As(err, &readErr):
		return nil, key, fmt.Errorf("corrupt gzip data: %w", readErr.err)
	case err != nil:
		return nil, key, err
	}
	return recs, key, nil
}

// decodeList reads a JSON list one element at a time, so that it stops as
// soon as the list holds more than maxRecords records rather than after
// it has allocated them all. Blank data or null is an empty list.
func decodeList[R any](r io.Reader, maxRecords int) ([]R, error) {
	dec := json.NewDecoder(r)
	tok, err := dec.Token()
	if err == io.EOF || err == nil && tok == nil {
		return nil, nil
	}
	if err != nil {
		return nil, notAList(err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		return nil, notAList(fmt.Errorf("it starts with %v", tok))
	}
	var out []R
	for dec.More() {
		if len(out) == maxRecords {
			return nil, fmt.Errorf("more than %d records", maxRecords)
		}
		var rec R
		if err := dec.Decode(&rec); err != nil {
			return nil, notAList(fmt.Errorf("record %d: %w", len(out)+1, err))
		}
		out = append(out, rec)
	}
	if _, err := dec.Token(); err != nil {
		return nil, notAList(err)
	}
	// Reading to the end checks a gzip's checksum too.
	switch _, err := dec.Token(); {
	case err == nil:
		return nil, notAList(errors.New("data after the list"))
	case err != io.EOF:
		return nil, notAList(err)
	}
	return out, nil
}

// notAList says the data is no list of records, unless reading it failed.
func notAList(err error) error {
	var readErr *readError
	if errors.Is(err, errTooLarge) || errors.Is(err, errTooManyItems) || errors.As(err, &readErr) {
		return err
	}
	return fmt.Errorf("not a list of records: %w", err)
}

// Errors of a boundedReader: data longer than a format allows, or with
// more items.
var (
	errTooLarge     = errors.New("too large")
	errTooManyItems = errors.New("too many items")
)

// readError is a failure to read the data (corrupt gzip), as opposed to
// data that does not decode.
type readError struct{ err error }

func (e *readError) Error() string { return e.err.Error() }

// boundedReader passes data on until it holds more than bytesLeft bytes
// or itemsLeft items (see itemCounter), then fails, rather than end the
// data early as io.LimitReader does; it tells read failures apart as
// *readError. Counting as the data streams stops a record of millions of
// empty strings before the decoder holds it whole.
//
// It fills each read: json.Decoder scans blank space again after every
// read, so the short reads of a gzip stream would make a megabyte of it
// cost a second.
type boundedReader struct {
	r                    io.Reader
	bytesLeft, itemsLeft int
	items                itemCounter
}

func (b *boundedReader) Read(p []byte) (int, error) {
	if b.bytesLeft < 0 {
		return 0, errTooLarge
	}
	if b.itemsLeft < 0 {
		return 0, errTooManyItems
	}
	if len(p) > b.bytesLeft+1 {
		p = p[:b.bytesLeft+1]
	}
	var n int
	var err error
	for n < len(p) && err == nil {
		var m int
		m, err = b.r.Read(p[n:])
		n += m
	}
	b.bytesLeft -= n
	b.itemsLeft -= b.items.count(p[:n])
	switch {
	case b.bytesLeft < 0:
		return 0, errTooLarge
	case b.itemsLeft < 0:
		return 0, errTooManyItems
	case err != nil && err != io.EOF:
		return n, &readError{err}
	}
	return n, err
}

// itemCounter counts the list elements and object members in JSON text,
// what decoding allocates for beyond the bytes it copies: each follows a
// '[', '{' or ',' outside a string (an empty list or object counts one).
type itemCounter struct {
	inString, escaped bool
}

func (c *itemCounter) count(p []byte) int {
	n := 0
	for _, b := range p {
		switch {
		case c.escaped:
			c.escaped = false
		case c.inString:
			c.escaped = b == '\\'
			c.inString = b != '"'
		case b == '"':
			c.inString = true
		case b == '[' || b == '{' || b == ',':
			n++
		}
	}
	return n
}

// size renders a byte count for messages.
func size(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
