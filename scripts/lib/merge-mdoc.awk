# Merges hand-written sections into a man page made by swift-argument-parser's
# generate-manual (mdoc), for scripts/package-deb:
#
#   awk -v extra=deploy/man/gate.1.extra -f scripts/lib/merge-mdoc.awk gate.1
#
# Each `.Sh NAME` section of the extra file goes where mdoc(7) orders it
# (ENVIRONMENT, FILES, EXIT STATUS, EXAMPLES, DIAGNOSTICS, SEE ALSO, ... AUTHORS);
# one with the name of a generated section replaces it. Comment lines before
# the first section are dropped. Also makes the generated text clean for groff:
# an empty line (a paragraph break in the help text) becomes `.Pp`, and a text
# line starting with an apostrophe (a groff control character) is escaped.

function name_of(line,    name) {
    name = line
    sub(/^\.Sh[ \t]+/, "", name)
    gsub(/"/, "", name)
    return name
}

function rank(name) {
    if (name in ranks) return ranks[name]
    return 4 # an unknown section: after DESCRIPTION
}

function flush_before(limit,    i) {
    for (i = 1; i <= count; i++)
        if (!emitted[i] && rank(names[i]) < limit) emit(i)
}

function emit(i) {
    printf "%s", bodies[i]
    emitted[i] = 1
}

BEGIN {
    split("NAME SYNOPSIS DESCRIPTION _ ENVIRONMENT FILES EXIT_STATUS EXAMPLES DIAGNOSTICS SEE_ALSO STANDARDS HISTORY AUTHORS CAVEATS BUGS", order, " ")
    for (i = 1; i in order; i++) {
        key = order[i]
        gsub(/_/, " ", key)
        ranks[key] = i
    }
    count = 0
    while ((getline line < extra) > 0) {
        if (line ~ /^\.Sh[ \t]/) {
            count++
            names[count] = name_of(line)
            replaces[names[count]] = count
        }
        if (count > 0) bodies[count] = bodies[count] line "\n"
    }
    close(extra)
    skipping = 0
}

/^\.Sh[ \t]/ {
    name = name_of($0)
    flush_before(rank(name))
    if (name in replaces) {
        if (!emitted[replaces[name]]) emit(replaces[name])
        skipping = 1
        next
    }
    skipping = 0
}

skipping { next }

/^[ \t]*$/ {
    if (previous != ".Pp") print ".Pp"
    previous = ".Pp"
    next
}

/^'/ { $0 = "\\&" $0 }

{ print; previous = $0 }

END {
    flush_before(1000)
}
