// libFuzzer target: gptrun's checkpoint reader (runtime/ckpt/Checkpoint.h)
// on an arbitrary index. A real checkpoint of the test fixture's tiny model
// is saved once; each input replaces its checkpoint.pb, which is then read
// the way gptrun --resume reads it: the index alone (the launcher's check),
// then the index against the manifest and the arena files it names,
// restoring into a context. Bad input must end in std::runtime_error (one
// line for the user): never a crash, a sanitizer report, a read outside the
// checkpoint directory or an allocation sized by a corrupt field.
#include "runtime/ckpt/Checkpoint.h"
#include "runtime/core/Context.h"
#include "test/unit/runtime/fixtures/FixtureManifest.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <unistd.h>

namespace {

struct Fixture {
  gptc::manifest::Manifest manifest = gptrt::test::fixtureManifest();
  gptrt::Context ctx{manifest};
  std::string checkpoint;

  Fixture() {
    const std::string root = "/tmp/gptc-fuzz-ckpt-" + std::to_string(getpid());
    std::filesystem::remove_all(root);
    std::atexit([] {
      std::error_code ignored;
      std::filesystem::remove_all(
          "/tmp/gptc-fuzz-ckpt-" + std::to_string(getpid()), ignored);
    });
    gptc::checkpoint::Checkpoint index;
    index.set_step(1);
    index.set_world_size(1);
    checkpoint = gptrt::ckpt::save(root, manifest, ctx, index, /*keep=*/0);
    // tools/check-fuzz.sh takes the valid index as the seed.
    if (const char *seed = std::getenv("GPTC_FUZZ_WRITE_SEED"))
      std::filesystem::copy_file(
          checkpoint + "/checkpoint.pb", seed,
          std::filesystem::copy_options::overwrite_existing);
  }
};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static Fixture fixture;
  const std::string index = fixture.checkpoint + "/checkpoint.pb";
  FILE *f = std::fopen(index.c_str(), "wb");
  if (f == nullptr)
    return 0;
  std::fwrite(data, 1, size, f);
  std::fclose(f);
  try {
    gptrt::ckpt::readIndex(fixture.checkpoint);
    gptrt::ckpt::load(fixture.checkpoint, fixture.manifest, fixture.ctx,
                      /*worldSize=*/1);
  } catch (const std::runtime_error &) {
    // The reader's refusal: what bad input must end in.
  }
  return 0;
}
