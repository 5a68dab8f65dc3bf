extension GateConfig {
    /// Parses and validates a configuration file (docs/CONTRACT.md#configuration).
    ///
    /// Reports every problem it finds, sorted by line, so that one edit can
    /// fix them all. A TOML syntax error stops the parse: past it, the meaning
    /// of the file is a guess.
    public static func parse(toml text: String, file: String) throws(ConfigError) -> GateConfig {
        let document: TOMLDocument
        do throws(TOMLSyntaxError) {
            document = try TOMLDocument(parsing: text)
        } catch {
            throw ConfigError(problems: ConfigValidator.problems(for: error, file: file))
        }
        var validator = ConfigValidator(document: document, file: file)
        let config = validator.validate()
        guard let config, validator.problems.isEmpty else {
            throw ConfigError(problems: validator.sortedProblems)
        }
        return config
    }
}
