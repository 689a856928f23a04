// A message's header fields in arrival order, kept in one string: what the
// proxy's parsers keep instead of Beast's fields container (answer_parser.hpp
// for an upstream answer, request_parser.hpp for a client's request).
// The proxy walks fields in order and never looks one up by name
// (field_scan.hpp), so a field costs an append, not an allocation and a
// case-insensitive red-black tree insert.
//
// The views a Field gives point into the text: valid until the next field is
// added (a chunked body's trailer) or the fields are cleared.
#pragma once

#include <boost/beast/http/field.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace modelproxy::transport {

// The enum a field is kept under: Beast's enum for the names the proxy
// switches on (the framing fields, and those field_scan.hpp reads), and
// field::unknown for every other name, Beast's or not. The one-pass readers
// classify a name string, Beast's parsers narrow the enum Beast computed, so
// a field has the same enum whichever parser read it. Beast's
// string_to_field hashes the name to find it among some 350; this is a
// switch on the length and a compare of two or three words (string_to_field
// was 1.4 % of the CPU per request). Pure.
boost::beast::http::field known_field(std::string_view name);
boost::beast::http::field known_field(boost::beast::http::field beast);

class FlatFields {
public:
    class Field {
    public:
        boost::beast::http::field name() const { return name_; }
        std::string_view name_string() const { return name_string_; }
        std::string_view value() const { return value_; }

    private:
        friend class FlatFields;
        Field(boost::beast::http::field name, std::string_view name_string, std::string_view value)
            : name_(name), name_string_(name_string), value_(value) {}
        boost::beast::http::field name_;
        std::string_view name_string_;
        std::string_view value_;
    };

    class iterator {
    public:
        Field operator*() const { return fields_->at(index_); }
        iterator& operator++() {
            ++index_;
            return *this;
        }
        bool operator==(const iterator& other) const { return index_ == other.index_; }

    private:
        friend class FlatFields;
        iterator(const FlatFields* fields, std::size_t index) : fields_(fields), index_(index) {}
        const FlatFields* fields_;
        std::size_t index_;
    };

    std::size_t size() const { return slots_.size(); }
    Field at(std::size_t i) const {
        const Slot& s = slots_[i];
        const std::string_view text(text_);
        return Field(s.name, text.substr(s.name_at, s.name_size), text.substr(s.value_at, s.value_size));
    }
    iterator begin() const { return iterator(this, 0); }
    iterator end() const { return iterator(this, slots_.size()); }

    // One more field, after those there are (a parser's on_field_impl).
    void add(boost::beast::http::field name, std::string_view name_string, std::string_view value) {
        const auto name_at = static_cast<std::uint32_t>(text_.size());
        text_.append(name_string);
        const auto value_at = static_cast<std::uint32_t>(text_.size());
        text_.append(value);
        slots_.push_back({name, name_at, static_cast<std::uint32_t>(name_string.size()), value_at,
                          static_cast<std::uint32_t>(value.size())});
    }

    // The bytes from `first` to `last` (a head's field lines as they
    // arrived) appended to the text in one copy; returns where they begin
    // in it. Fields in them are then added with add_copied, by their
    // offsets from `first`: a one-pass reader's head costs one copy, not
    // two per field.
    std::size_t copy_lines(const char* first, const char* last) {
        const std::size_t at = text_.size();
        text_.append(first, last);
        return at;
    }
    void add_copied(boost::beast::http::field name, std::size_t name_at, std::size_t name_size,
                    std::size_t value_at, std::size_t value_size) {
        slots_.push_back({name, static_cast<std::uint32_t>(name_at), static_cast<std::uint32_t>(name_size),
                          static_cast<std::uint32_t>(value_at), static_cast<std::uint32_t>(value_size)});
    }

protected:
    // No fields and no text, keeping the capacity.
    void clear_fields() {
        text_.clear();
        slots_.clear();
    }
    // What the owner keeps before the fields (a reason, a method and
    // target) is the text's start, written before the first field.
    std::string text_;

private:
    struct Slot {
        boost::beast::http::field name;
        std::uint32_t name_at, name_size, value_at, value_size;
    };
    std::vector<Slot> slots_;
};

}  // namespace modelproxy::transport
