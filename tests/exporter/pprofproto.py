# SPDX-License-Identifier: MIT
"""A reader of gzipped profile.proto (github.com/google/pprof,
proto/profile.proto), the fields the tests look at, written from the
format's definition: nothing here is the encoder's code.

    p = Profile(gzipped_bytes)
    p.sample_types        [("alloc_objects", "count"), ...]
    p.default_sample_type "" when unset
    p.period_type, p.period, p.time_nanos, p.duration_nanos
    p.samples             [Sample(locations=[ids], values=[ints],
                                  labels={key: (str, num, num_unit)})]
    p.mappings            {id: Mapping(start, limit, offset, filename,
                                       build_id, has_functions)}
    p.locations           {id: Location(mapping, address, lines=[(fn, line)])}
    p.functions           {id: Function(name, system_name, filename)}
    p.by_function(type)   {leaf function name: summed value of `type`}
"""
import collections
import gzip

Sample = collections.namedtuple("Sample", "locations values labels")
Mapping = collections.namedtuple(
    "Mapping", "start limit offset filename build_id has_functions")
Location = collections.namedtuple("Location", "mapping address lines")
Function = collections.namedtuple("Function", "name system_name filename")


class Malformed(Exception):
    pass


def _varint(b, i):
    v, shift = 0, 0
    while True:
        if i >= len(b) or shift > 63:
            raise Malformed("a varint runs off the end")
        c = b[i]
        i += 1
        v |= (c & 0x7F) << shift
        if not c & 0x80:
            return v, i
        shift += 7


def _fields(b):
    """(field number, wire type, value) of a message: ints for varints,
    bytes for length-delimited fields."""
    i = 0
    while i < len(b):
        key, i = _varint(b, i)
        field, wire = key >> 3, key & 7
        if wire == 0:
            v, i = _varint(b, i)
        elif wire == 2:
            n, i = _varint(b, i)
            if i + n > len(b):
                raise Malformed("field %d runs off the end" % field)
            v, i = b[i:i + n], i + n
        else:
            raise Malformed("wire type %d (field %d)" % (wire, field))
        yield field, wire, v


def _ints(wire, v, signed=False):
    """A repeated integer field: packed (bytes) or one varint."""
    if wire == 0:
        out = [v]
    else:
        out, i = [], 0
        while i < len(v):
            x, i = _varint(v, i)
            out.append(x)
    if signed:
        out = [x - (1 << 64) if x >= 1 << 63 else x for x in out]
    return out


def _msg(b):
    """{field: [values]} of a message of scalars and bytes."""
    out = collections.defaultdict(list)
    for field, wire, v in _fields(b):
        out[field].append((wire, v))
    return out


def _one(m, field, default=0):
    vals = m.get(field)
    return vals[-1][1] if vals else default


class Profile:
    def __init__(self, data):
        if data[:2] != b"\x1f\x8b":
            raise Malformed("not gzipped")
        raw = gzip.decompress(data)
        strings, types, samples, mappings = [], [], [], {}
        locations, functions = {}, {}
        period_type = (0, 0)
        top = _msg(raw)
        for _, v in top.get(6, []):
            strings.append(v.decode("utf-8"))
        if not strings or strings[0] != "":
            raise Malformed("the string table does not begin with \"\"")

        def s(i):
            if i >= len(strings):
                raise Malformed("string %d of %d" % (i, len(strings)))
            return strings[i]
        for _, v in top.get(1, []):
            m = _msg(v)
            types.append((s(_one(m, 1)), s(_one(m, 2))))
        for _, v in top.get(2, []):
            locs, values, labels = [], [], {}
            for field, wire, x in _fields(v):
                if field == 1:
                    locs += _ints(wire, x)
                elif field == 2:
                    values += _ints(wire, x, signed=True)
                elif field == 3:
                    m = _msg(x)
                    labels[s(_one(m, 1))] = (s(_one(m, 2)), _one(m, 3),
                                             s(_one(m, 4)))
            samples.append(Sample(locs, values, labels))
        for _, v in top.get(3, []):
            m = _msg(v)
            mappings[_one(m, 1)] = Mapping(
                _one(m, 2), _one(m, 3), _one(m, 4), s(_one(m, 5)),
                s(_one(m, 6)), bool(_one(m, 7)))
        for _, v in top.get(4, []):
            m = _msg(v)
            lines = []
            for _, ln in m.get(4, []):
                lm = _msg(ln)
                lines.append((_one(lm, 1), _one(lm, 2)))
            locations[_one(m, 1)] = Location(_one(m, 2), _one(m, 3), lines)
        for _, v in top.get(5, []):
            m = _msg(v)
            functions[_one(m, 1)] = Function(
                s(_one(m, 2)), s(_one(m, 3)), s(_one(m, 4)))
        if top.get(11):
            m = _msg(top[11][-1][1])
            period_type = (s(_one(m, 1)), s(_one(m, 2)))
        self.strings = strings
        self.sample_types = types
        self.samples = samples
        self.mappings = mappings
        self.locations = locations
        self.functions = functions
        self.period_type = period_type
        self.period = _one(top, 12)
        self.time_nanos = _one(top, 9)
        self.duration_nanos = _one(top, 10)
        self.default_sample_type = s(_one(top, 14))
        for smp in samples:
            if len(smp.values) != len(types):
                raise Malformed("a sample of %d values, %d types"
                                % (len(smp.values), len(types)))
            for loc in smp.locations:
                if loc not in locations:
                    raise Malformed("location %d unknown" % loc)
        for loc in locations.values():
            if loc.mapping and loc.mapping not in mappings:
                raise Malformed("mapping %d unknown" % loc.mapping)
            for fn, _ in loc.lines:
                if fn not in functions:
                    raise Malformed("function %d unknown" % fn)

    def function_of(self, location_id):
        """The function name of a location ("" if not named)."""
        loc = self.locations[location_id]
        return self.functions[loc.lines[0][0]].name if loc.lines else ""

    def by_function(self, sample_type):
        """{leaf function: summed value} of one sample type."""
        k = [t for t, _ in self.sample_types].index(sample_type)
        out = collections.Counter()
        for smp in self.samples:
            out[self.function_of(smp.locations[0])] += smp.values[k]
        return out
