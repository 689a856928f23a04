// A directory under $TMPDIR (or /tmp) that is removed with everything in it
// when the object is destroyed. Move-only.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace modelproxy::test {

class TempDir {
public:
    // Creates "<tmp>/modelproxy-<prefix>-XXXXXX"; throws std::runtime_error
    // when the directory cannot be made.
    explicit TempDir(std::string_view prefix = "test");
    ~TempDir();
    TempDir(TempDir&& other) noexcept;
    TempDir& operator=(TempDir&& other) noexcept;
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;

    const std::filesystem::path& path() const { return path_; }

    // Writes `content` to path()/name (parents created), replacing any file
    // there atomically (write to a sibling then rename, so a reader such as a
    // SIGHUP reload never sees half a file). Returns the full path.
    std::filesystem::path write(std::string_view name, std::string_view content,
                                bool executable = false) const;

private:
    std::filesystem::path path_;
};

// The whole content of a file; throws std::runtime_error when unreadable.
std::string read_file(const std::filesystem::path& path);

}  // namespace modelproxy::test
