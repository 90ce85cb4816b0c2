// image-classifier's first step: encoded images (BYTES, one JPEG / PNG per row) to resnet-tiny's
// input, FP32 [3, 224, 224] per image: decoded with sharp (libvips), the shorter side resized to
// 224 and the centre cropped, RGB whatever the source (greyscale, palette, alpha), then scaled
// to [0, 1] and normalised with ImageNet's per-channel mean and standard deviation, laid out NCHW.
// An element may also hold the file as base64 text, since a KServe JSON client's BYTES elements
// are strings (an encoded image never starts with base64's alphabet: PNG opens with 0x89, JPEG
// with 0xFF). Bytes sharp cannot decode fail the request with a 400 naming the input and the row.
import { InferenceError, fp32, type ModelRequest, type ModelResponse } from 'conveyor/backend';
import sharp from 'sharp';

const SIZE = 224;
const MEAN = [0.485, 0.456, 0.406] as const;
const STD = [0.229, 0.224, 0.225] as const;
const BASE64_TEXT = /^[A-Za-z0-9+/=\r\n]+$/;

/** The encoded file: the element itself, or its base64 text decoded. */
function encodedFile(element: Uint8Array): Uint8Array {
  const text = Buffer.from(element.buffer, element.byteOffset, element.byteLength).toString('latin1');
  return BASE64_TEXT.test(text) ? Buffer.from(text, 'base64') : element;
}

/** One image's RGB pixels at SIZE x SIZE, normalised, channel-major, written into `out`. */
async function preprocess(image: Uint8Array, row: number, out: Float32Array): Promise<void> {
  let pixels: Buffer;
  try {
    pixels = await sharp(encodedFile(image), { failOn: 'error' }).rotate().removeAlpha().toColourspace('srgb').resize(SIZE, SIZE, { fit: 'cover' }).raw().toBuffer();
  } catch (error) {
    throw new InferenceError(`input 'IMAGE'[${row}] is not an image sharp can decode (JPEG, PNG, ..., or its base64 text): ${(error as Error).message}`, 'INVALID_ARG');
  }
  const plane = SIZE * SIZE;
  for (let p = 0; p < plane; p++) {
    for (let c = 0; c < 3; c++) out[c * plane + p] = (pixels[p * 3 + c]! / 255 - MEAN[c]!) / STD[c]!;
  }
}

export default class ImagePreprocess {
  async execute(requests: readonly ModelRequest[]): Promise<ModelResponse[]> {
    return Promise.all(
      requests.map(async (request): Promise<ModelResponse> => {
        const images = request.input('IMAGE').data as Uint8Array[];
        const per = 3 * SIZE * SIZE;
        const batch = new Float32Array(images.length * per);
        try {
          await Promise.all(images.map((image, row) => preprocess(image, row, batch.subarray(row * per, (row + 1) * per))));
        } catch (error) {
          return { error: error as Error };
        }
        return { outputs: [fp32('input', [images.length, 3, SIZE, SIZE], batch)] };
      }),
    );
  }
}
