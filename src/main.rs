fn main() {
    std::process::exit(fsarena::cli::main());
}
