//! The typed client codegen generates: the `Widget` of `api-defs/examples/widget.yaml`
//! (apiserver's `client` feature) used with `kube::Api` and no hand-written glue —
//! create, get, list, replace, watch, server-side apply and delete on the real server;
//! and the `Gadget` of `api-defs/examples/gadget.rs`, whose `#[derive(Resource)]`
//! implements the same traits for a Rust definition with a `metadata` field.

use std::time::Duration;

use apiserver::generated::gadget::{Gadget, GadgetMode, GadgetSpec, GadgetStatus};
use apiserver::generated::types::example_dev_v1::{Widget, WidgetSpec};
use apiserver_tests::TestServer;
use futures_util::StreamExt;
use kube::api::{
    Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams,
};
use kube::{Resource, ResourceExt};

fn spec(color: &str) -> WidgetSpec {
    WidgetSpec {
        color: color.to_string(),
        replicas: Some(2),
        size: None,
        labels: None,
        ports: None,
        settings: None,
    }
}

/// The next watch event, within a deadline.
async fn next_event<K, S>(events: &mut S) -> WatchEvent<K>
where
    S: futures_util::Stream<Item = kube::Result<WatchEvent<K>>> + Unpin,
{
    tokio::time::timeout(Duration::from_secs(10), events.next())
        .await
        .expect("a watch event within 10 s")
        .expect("the watch stays open")
        .expect("a decodable watch event")
}

#[tokio::test(flavor = "multi_thread")]
async fn the_generated_widget_type_serves_crud_watch_and_server_side_apply_through_kube_api() {
    // The generated type is a kube::Resource through k8s-openapi's traits.
    assert_eq!(Widget::api_version(&()), "example.dev/v1");
    assert_eq!(Widget::plural(&()), "widgets");

    let s = TestServer::start();
    let widgets: Api<Widget> = Api::default_namespaced(s.client().await);

    let empty = widgets.list(&ListParams::default()).await.expect("list");
    assert!(empty.items.is_empty());
    let from = empty
        .metadata
        .resource_version
        .expect("list resourceVersion");
    let mut events = widgets
        .watch(&WatchParams::default(), &from)
        .await
        .expect("watch")
        .boxed();

    // Create: defaults are applied and metadata comes back typed.
    let created = widgets
        .create(&PostParams::default(), &Widget::new("w1", spec("red")))
        .await
        .expect("create");
    assert_eq!(created.name_any(), "w1");
    assert_eq!(created.namespace().as_deref(), Some("default"));
    assert!(created.uid().is_some() && created.resource_version().is_some());
    assert_eq!(created.spec.color, "red");
    assert_eq!(created.kind, "Widget");
    match next_event(&mut events).await {
        WatchEvent::Added(w) => assert_eq!(w, created),
        other => panic!("expected ADDED w1, got {other:?}"),
    }

    // Get and list return the same typed object.
    assert_eq!(widgets.get("w1").await.expect("get"), created);
    let names: Vec<String> = widgets
        .list(&ListParams::default())
        .await
        .expect("list")
        .items
        .iter()
        .map(ResourceExt::name_any)
        .collect();
    assert_eq!(names, ["w1"]);

    // Replace: the change is stored and watched.
    let mut blue = created.clone();
    blue.spec.color = "blue".into();
    let replaced = widgets
        .replace("w1", &PostParams::default(), &blue)
        .await
        .expect("replace");
    assert_eq!(replaced.spec.color, "blue");
    assert_ne!(replaced.resource_version(), created.resource_version());
    match next_event(&mut events).await {
        WatchEvent::Modified(w) => assert_eq!(w.spec.color, "blue"),
        other => panic!("expected MODIFIED w1, got {other:?}"),
    }

    // Server-side apply with the typed object: created, owned by this field manager.
    let applied = widgets
        .patch(
            "w2",
            &PatchParams::apply("typed-client"),
            &Patch::Apply(Widget::new("w2", spec("green"))),
        )
        .await
        .expect("server-side apply");
    assert_eq!(applied.spec.color, "green");
    let managers: Vec<(String, String)> = applied
        .managed_fields()
        .iter()
        .map(|m| {
            (
                m.manager.clone().unwrap_or_default(),
                m.operation.clone().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(managers, [("typed-client".into(), "Apply".into())]);
    match next_event(&mut events).await {
        WatchEvent::Added(w) => assert_eq!(w.name_any(), "w2"),
        other => panic!("expected ADDED w2, got {other:?}"),
    }

    // Delete: a custom kind answers with the deleted object, and the watch sees it go.
    let deleted = widgets
        .delete("w1", &DeleteParams::default())
        .await
        .expect("delete")
        .left()
        .expect("the deleted Widget");
    assert_eq!(deleted.name_any(), "w1");
    match next_event(&mut events).await {
        WatchEvent::Deleted(w) => assert_eq!(w.name_any(), "w1"),
        other => panic!("expected DELETED w1, got {other:?}"),
    }
    let left: Vec<Widget> = widgets
        .list(&ListParams::default())
        .await
        .expect("list")
        .items;
    assert_eq!(
        left.iter().map(|w| w.name_any()).collect::<Vec<_>>(),
        ["w2"]
    );
}

fn gadget_spec(level: i32) -> GadgetSpec {
    GadgetSpec {
        mode: GadgetMode::Manual,
        level,
        owner_email: None,
        features: vec!["wifi".into()],
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_derived_gadget_type_serves_crud_watch_and_status_through_kube_api() {
    // `#[derive(Resource)]` made the Rust definition a cluster-scoped kube::Resource.
    assert_eq!(Gadget::api_version(&()), "example.dev/v1");
    assert_eq!(Gadget::plural(&()), "gadgets");
    assert_eq!(Gadget::url_path(&(), None), "/apis/example.dev/v1/gadgets");

    let s = TestServer::start();
    let gadgets: Api<Gadget> = Api::all(s.client().await);
    let from = gadgets
        .list(&ListParams::default())
        .await
        .expect("list")
        .metadata
        .resource_version
        .expect("list resourceVersion");
    let mut events = gadgets
        .watch(&WatchParams::default(), &from)
        .await
        .expect("watch")
        .boxed();

    let created = gadgets
        .create(&PostParams::default(), &Gadget::new("g1", gadget_spec(3)))
        .await
        .expect("create");
    assert_eq!(created.name_any(), "g1");
    assert_eq!(created.namespace(), None);
    assert!(created.uid().is_some() && created.resource_version().is_some());
    assert_eq!((created.kind.as_str(), created.spec.level), ("Gadget", 3));
    match next_event(&mut events).await {
        WatchEvent::Added(g) => assert_eq!(g, created),
        other => panic!("expected ADDED g1, got {other:?}"),
    }
    assert_eq!(gadgets.get("g1").await.expect("get"), created);

    // Replace, then the status subresource.
    let mut louder = created.clone();
    louder.spec.level = 11;
    let replaced = gadgets
        .replace("g1", &PostParams::default(), &louder)
        .await
        .expect("replace");
    assert_eq!(replaced.spec.level, 11);
    match next_event(&mut events).await {
        WatchEvent::Modified(g) => assert_eq!(g.spec.level, 11),
        other => panic!("expected MODIFIED g1, got {other:?}"),
    }
    let mut on = replaced.clone();
    on.status = Some(GadgetStatus { powered: true });
    let powered = gadgets
        .replace_status("g1", &PostParams::default(), &on)
        .await
        .expect("replace status");
    assert_eq!(powered.status, Some(GadgetStatus { powered: true }));
    match next_event(&mut events).await {
        WatchEvent::Modified(g) => assert_eq!(g.status, Some(GadgetStatus { powered: true })),
        other => panic!("expected MODIFIED g1 status, got {other:?}"),
    }

    // Server-side apply of the typed object creates a second one.
    let applied = gadgets
        .patch(
            "g2",
            &PatchParams::apply("typed-client"),
            &Patch::Apply(Gadget::new("g2", gadget_spec(5))),
        )
        .await
        .expect("server-side apply");
    assert_eq!(applied.spec.level, 5);
    match next_event(&mut events).await {
        WatchEvent::Added(g) => assert_eq!(g.name_any(), "g2"),
        other => panic!("expected ADDED g2, got {other:?}"),
    }

    gadgets
        .delete("g1", &DeleteParams::default())
        .await
        .expect("delete");
    match next_event(&mut events).await {
        WatchEvent::Deleted(g) => assert_eq!(g.name_any(), "g1"),
        other => panic!("expected DELETED g1, got {other:?}"),
    }
    let left: Vec<String> = gadgets
        .list(&ListParams::default())
        .await
        .expect("list")
        .items
        .iter()
        .map(ResourceExt::name_any)
        .collect();
    assert_eq!(left, ["g2"]);
}
