fn main() -> std::process::ExitCode {
    exec_host::cli::main()
}
