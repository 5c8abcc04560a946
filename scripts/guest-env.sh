# Sourced by scripts that build the guest: the C toolchain for QuickJS on wasm32-wasip2.
# rquickjs-sys would otherwise try to download a WASI SDK; Debian's clang and wasi-libc do.
export RQUICKJS_SYS_NO_WASI_SDK=1
export CC_wasm32_wasip2="${CC_wasm32_wasip2:-clang-19}"
export AR_wasm32_wasip2="${AR_wasm32_wasip2:-llvm-ar-19}"
export CFLAGS_wasm32_wasip2="${CFLAGS_wasm32_wasip2:--isystem /usr/include/wasm32-wasi}"
# QuickJS's JSON parser reads numbers through this function of the guest's instead of the C
# library's slow `strtod` (guest-js/src/json_number.rs).
case " $CFLAGS_wasm32_wasip2 " in
  *" -Dstrtod=exec_host_strtod "*) ;; # sourced before, in this environment
  *) export CFLAGS_wasm32_wasip2="$CFLAGS_wasm32_wasip2 -Dstrtod=exec_host_strtod" ;;
esac
