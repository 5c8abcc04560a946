//! Pre-initialisation: the guest's `init` run once and snapshotted into the component.

use wasmtime::component::{Component, Instance, Linker, WasmList};
use wasmtime::{Engine, Store};
use wasmtime_wizer::{ComponentInstanceState, Wizer};

use super::{ExecState, SetupError};
use crate::sandbox::guest;

/// Runs the guest's `init` once and snapshots the result (wizer), so every Exec starts from
/// an engine that is already set up. `scripts/build-guest` does this when it builds the
/// guest (through `scripts/preinitialise`); the result is the committed artefact. The
/// guest's randomness and clocks are fixed meanwhile, so the same guest always gives the
/// same snapshot.
pub async fn preinitialise(guest: &[u8]) -> Result<Vec<u8>, SetupError> {
    let mut config = wasmtime::Config::new();
    config.wasm_component_model(true);
    let engine = Engine::new(&config).map_err(SetupError::engine)?;
    let mut linker = Linker::new(&engine);
    guest::add_to_linker(&mut linker).map_err(SetupError::engine)?;
    let mut store = Store::new(&engine, super::snapshot_state());
    let mut wizer = Wizer::new();
    wizer.init_func("init").keep_init_func(true);
    let (context, instrumented) =
        wizer.instrument_component(guest).map_err(|e| SetupError::guest("instrumenting it failed", e))?;
    let component = Component::new(&engine, &instrumented).map_err(|e| SetupError::guest("compiling it failed", e))?;
    let instance =
        linker.instantiate_async(&mut store, &component).await.map_err(|e| SetupError::guest("instantiating it failed", e))?;
    let init =
        instance.get_typed_func::<(), ()>(&mut store, "init").map_err(|e| SetupError::guest("it has no init export", e))?;
    if let Err(error) = init.call_async(&mut store, ()).await {
        let printed = String::from_utf8_lossy(&store.data().stderr.contents()).trim().to_string();
        return Err(SetupError::guest(&format!("its init failed ({printed})"), error));
    }
    let mut probe = Probe { store: &mut store, instance };
    wizer.snapshot_component(&context, &mut probe).await.map_err(|e| SetupError::guest("snapshotting it failed", e))
}

/// Lets wizer read the instrumented instance's state.
struct Probe<'a> {
    store: &'a mut Store<ExecState>,
    instance: Instance,
}

impl Probe<'_> {
    async fn call<R>(&mut self, instance: &str, func: &str) -> R
    where
        R: wasmtime::component::ComponentType + wasmtime::component::Lift + Send + Sync + 'static,
    {
        // These exports are added by wizer's own instrumentation of our own artefact; their
        // absence is a bug in this build, not input to handle.
        let (_, exported) = self.instance.get_export(&mut *self.store, None, instance).expect("wizer instrumentation export");
        let (_, func_index) =
            self.instance.get_export(&mut *self.store, Some(&exported), func).expect("wizer instrumentation function");
        let typed = self.instance.get_typed_func::<(), (R,)>(&mut *self.store, func_index).expect("wizer function type");
        typed.call_async(&mut *self.store, ()).await.expect("wizer state read").0
    }
}

impl ComponentInstanceState for Probe<'_> {
    async fn call_func_ret_list_u8(&mut self, instance: &str, func: &str, contents: impl FnOnce(&[u8]) + Send) {
        let list: WasmList<u8> = self.call(instance, func).await;
        contents(list.as_le_slice(&*self.store));
    }

    async fn call_func_ret_s32(&mut self, instance: &str, func: &str) -> i32 {
        self.call(instance, func).await
    }

    async fn call_func_ret_s64(&mut self, instance: &str, func: &str) -> i64 {
        self.call(instance, func).await
    }

    async fn call_func_ret_f32(&mut self, instance: &str, func: &str) -> u32 {
        self.call::<f32>(instance, func).await.to_bits()
    }

    async fn call_func_ret_f64(&mut self, instance: &str, func: &str) -> u64 {
        self.call::<f64>(instance, func).await.to_bits()
    }
}
