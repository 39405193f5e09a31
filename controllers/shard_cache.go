/*
Copyright 2026 The Ergon Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package controllers

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ergon-dev/ergon/internal/shard"
)

// ShardedCache makes the manager's cache for shard s: a cache like any other, except that the
// event handlers controllers register on its informers see only the objects of the namespaces s
// owns. Every controller of the manager thus reconciles only its shard's Runs, Gates, Scenes and
// Triggers, without a predicate of its own, and requeues (a Run waiting for its Scene, a Trigger
// for its next time) stay within the shard because every object a controller maps an event to
// lives in the namespace of the event.
//
// Why not a label selector on the cache: the API server selects an object by its own labels,
// not by its namespace's, so selecting by namespace would need a shard label stamped on every
// Run, pod and Scene (by a webhook, which misses what exists already) and relabelling everything
// whenever the number of shards changes. The hash of the namespace name needs neither.
//
// The cache still holds every namespace's objects: reads (the admission webhooks, which every
// shard serves, and the step pod budget) see the whole cluster. Sharding splits the work of
// reconciling and the API writes it makes, not the memory of the informers.
func ShardedCache(s shard.Shard) cache.NewCacheFunc {
	return func(config *rest.Config, opts cache.Options) (cache.Cache, error) {
		c, err := cache.New(config, opts)
		if err != nil || s.Count <= 1 {
			return c, err
		}
		return shardCache{Cache: c, shard: s}, nil
	}
}

// shardCache hands out informers whose event handlers see only the shard's namespaces.
type shardCache struct {
	cache.Cache
	shard shard.Shard
}

func (c shardCache) GetInformer(ctx context.Context, obj client.Object, opts ...cache.InformerGetOption) (cache.Informer, error) {
	i, err := c.Cache.GetInformer(ctx, obj, opts...)
	if err != nil {
		return nil, err
	}
	return shardInformer{Informer: i, shard: c.shard}, nil
}

func (c shardCache) GetInformerForKind(ctx context.Context, gvk schema.GroupVersionKind,
	opts ...cache.InformerGetOption) (cache.Informer, error) {
	i, err := c.Cache.GetInformerForKind(ctx, gvk, opts...)
	if err != nil {
		return nil, err
	}
	return shardInformer{Informer: i, shard: c.shard}, nil
}

// shardInformer filters the events of an informer by the namespace of their object.
type shardInformer struct {
	cache.Informer
	shard shard.Shard
}

func (i shardInformer) filter(h toolscache.ResourceEventHandler) toolscache.ResourceEventHandler {
	return toolscache.FilteringResourceEventHandler{Handler: h, FilterFunc: i.owns}
}

// owns reports whether obj (or the object a deletion tombstone stands for) is the shard's.
func (i shardInformer) owns(obj any) bool {
	if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	m, err := meta.Accessor(obj)
	return err == nil && i.shard.Owns(m.GetNamespace())
}

func (i shardInformer) AddEventHandler(h toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error) {
	return i.Informer.AddEventHandler(i.filter(h))
}

func (i shardInformer) AddEventHandlerWithResyncPeriod(h toolscache.ResourceEventHandler,
	resync time.Duration) (toolscache.ResourceEventHandlerRegistration, error) {
	return i.Informer.AddEventHandlerWithResyncPeriod(i.filter(h), resync)
}

func (i shardInformer) AddEventHandlerWithOptions(h toolscache.ResourceEventHandler,
	options toolscache.HandlerOptions) (toolscache.ResourceEventHandlerRegistration, error) {
	return i.Informer.AddEventHandlerWithOptions(i.filter(h), options)
}
