#version 330 core
// Colour conversion, fragment stage: the tone-mapped RGB picture -> one frame of yuv420p, laid
// out as the encoder takes it (app/export/_video.yuv420_layout): target row r, read back first
// row first, is row r of the Y plane (the picture's top row first) for r < height, below that the
// U plane and then the V plane, each (width/2) x (height/2), packed row after row into rows of
// width bytes. One R8 texel per byte, so reading the target back gives the frame as it is.
// BT.709 with limited range (Y 16..235, Cb Cr 16..240), as the stream is tagged. Chroma is sited
// as H.264 assumes by default (left: on the even column, between the two rows): a [1 2 1] / 4
// filter across the columns, the mean of the two rows. Pixels beyond the picture (odd sizes are
// padded to even) are black. Every value is rounded to its integer level here, so the result
// does not depend on how the target's format rounds.

uniform sampler2D picture;  // RGB, bottom row first
uniform ivec2 size;         // the picture's size
uniform ivec2 encoded;      // the frame's even size, >= size

out float level;

const vec3 LUMA = vec3(0.2126, 0.7152, 0.0722);

vec3 rgb(int x, int y) {  // y counts from the top
    if (x < 0 || y < 0 || x >= size.x || y >= size.y) {
        return vec3(0.0);
    }
    return texelFetch(picture, ivec2(x, size.y - 1 - y), 0).rgb;
}

float byte(float value) {
    return floor(clamp(value, 0.0, 255.0) + 0.5) / 255.0;
}

void main() {
    ivec2 texel = ivec2(gl_FragCoord.xy);
    int width = encoded.x, height = encoded.y;
    if (texel.y < height) {
        level = byte(16.0 + 219.0 * dot(LUMA, rgb(texel.x, texel.y)));
        return;
    }
    int half_width = width / 2;
    int offset = (texel.y - height) * width + texel.x;
    int plane_size = half_width * (height / 2);
    int plane = offset / plane_size;  // 0: U (Cb), 1: V (Cr)
    int index = offset - plane * plane_size;
    int x = 2 * (index % half_width), y = 2 * (index / half_width);
    vec3 sum = vec3(0.0);
    for (int row = 0; row < 2; ++row) {
        sum += rgb(max(x - 1, 0), y + row) + 2.0 * rgb(x, y + row) + rgb(x + 1, y + row);
    }
    vec3 mean = sum / 8.0;
    float luma = dot(LUMA, mean);
    float chroma = plane == 0 ? (mean.b - luma) / 1.8556 : (mean.r - luma) / 1.5748;
    level = byte(128.0 + 224.0 * chroma);
}
