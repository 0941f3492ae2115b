package operator

import (
	"context"

	configv1 "github.com/openshift/api/config/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/payload-applier/payload-applier/pkg/payload"
	"github.com/payload-applier/payload-applier/pkg/precondition"
)

// AdminAcks judges the cluster's admin gates as the operator's observer
// reads them, for plan and status, which have no current release at hand:
// an absent ConfigMap reads as empty there, where the operator would block
// on one its release ships.
func AdminAcks(ctx context.Context, kube kubernetes.Interface, cv *configv1.ClusterVersion) precondition.AdminAcks {
	if cv == nil {
		return precondition.AdminAcks{}
	}
	b := &observer{kube: kube, adminGates: precondition.DefaultAdminGates, adminAcks: precondition.DefaultAdminAcks}
	gates, acks := b.adminConfigMaps(ctx, nil)
	return precondition.JudgeAdminAcks(precondition.AdminAckVersion(cv.Status.History), gates, acks)
}

// ReadAdminConfigMap reads one of the admin ConfigMaps, telling absent
// from unreadable.
func ReadAdminConfigMap(ctx context.Context, kube kubernetes.Interface, name types.NamespacedName) precondition.AdminConfigMap {
	cm := precondition.AdminConfigMap{Name: name}
	got, err := kube.CoreV1().ConfigMaps(name.Namespace).Get(ctx, name.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		cm.Absent = true
	case err != nil:
		cm.Err = err
	default:
		cm.Data = got.Data
	}
	return cm
}

// ships says whether rel applies the ConfigMap name.
func ships(rel *payload.Release, name types.NamespacedName) bool {
	for _, m := range rel.Manifests {
		id := m.ID()
		if id.Group == "" && id.Kind == "ConfigMap" && id.Namespace == name.Namespace && id.Name == name.Name && !m.Delete() {
			return true
		}
	}
	return false
}

// watchAdminAcks pokes on every change of the two admin ConfigMaps, and
// on nothing else: each informer lists one name in one namespace. The
// returned function stops them.
func (b *observer) watchAdminAcks(ctx context.Context, poke func()) (stop func()) {
	var factories []informers.SharedInformerFactory
	for _, name := range []types.NamespacedName{b.adminGates, b.adminAcks} {
		f := informers.NewSharedInformerFactoryWithOptions(b.kube, 0, informers.WithNamespace(name.Namespace),
			informers.WithTweakListOptions(func(lo *metav1.ListOptions) {
				lo.FieldSelector = fields.OneTermEqualSelector("metadata.name", name.Name).String()
			}))
		inf := f.Core().V1().ConfigMaps().Informer()
		_, _ = inf.AddEventHandler(adminAckHandler(name, poke))
		b.caches.set(func(c *loopCaches) {
			if c.cmInformers == nil {
				c.cmInformers = map[types.NamespacedName]cache.SharedIndexInformer{}
			}
			c.cmInformers[name] = inf
		})
		f.Start(ctx.Done())
		factories = append(factories, f)
	}
	return func() {
		b.caches.set(func(c *loopCaches) { c.cmInformers = nil })
		for _, f := range factories {
			f.Shutdown()
		}
	}
}

// adminAckHandler pokes when the ConfigMap name appears after the first
// list (which the first sync reads anyway), changes, or goes.
func adminAckHandler(name types.NamespacedName, poke func()) cache.ResourceEventHandler {
	is := func(obj interface{}) bool {
		if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = t.Obj
		}
		cm, ok := obj.(*corev1.ConfigMap)
		return ok && cm.Namespace == name.Namespace && cm.Name == name.Name
	}
	return cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj interface{}, initial bool) {
			if !initial && is(obj) {
				poke()
			}
		},
		UpdateFunc: func(oldObj, newObj interface{}) {
			oldCM, ok1 := oldObj.(*corev1.ConfigMap)
			newCM, ok2 := newObj.(*corev1.ConfigMap)
			if ok1 && ok2 && is(newCM) && !equality.Semantic.DeepEqual(oldCM.Data, newCM.Data) {
				poke()
			}
		},
		DeleteFunc: func(obj interface{}) {
			if is(obj) {
				poke()
			}
		},
	}
}
